import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True, scope="session")
def _cache_in_tmp(tmp_path_factory):
    """Compile caches go to a fresh folder unless SIMFLOW_CACHE says otherwise."""
    if "SIMFLOW_CACHE" not in os.environ:
        os.environ["SIMFLOW_CACHE"] = str(tmp_path_factory.mktemp("simflow-cache"))
    yield
