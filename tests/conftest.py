import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True, scope="session")
def _cache_in_tmp(tmp_path_factory):
    """Compile caches and results go to fresh folders unless SIMFLOW_CACHE / SIMFLOW_RESULTS say otherwise."""
    if "SIMFLOW_CACHE" not in os.environ:
        os.environ["SIMFLOW_CACHE"] = str(tmp_path_factory.mktemp("simflow-cache"))
    if "SIMFLOW_RESULTS" not in os.environ:
        os.environ["SIMFLOW_RESULTS"] = str(tmp_path_factory.mktemp("simflow-results"))
    yield
