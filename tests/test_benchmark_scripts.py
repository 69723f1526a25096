"""The benchmark scripts still import what they use: a module moved or renamed in simflow breaks a script that
only runs on the GPU machine or for hours, so each is imported here (its main() is not run)."""

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.parametrize("script", sorted(p.name for p in BENCHMARKS.glob("*.py")))
def test_a_benchmark_script_imports(script, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(f"benchmark_{script[:-3]}", BENCHMARKS / script)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)  # the imports and definitions; main() runs only as __main__
    assert callable(getattr(module, "main", None)), f"{script} has no main()"
