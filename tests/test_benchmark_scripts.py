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


def test_cudnn_is_timed_with_its_faster_choice_and_the_flags_reset(monkeypatch):
    """time_cudnn: the faster of benchmark mode's pick and the heuristics' (each timed by _time_cudnn_choice, which
    needs a GPU), with TF32 and benchmark mode off afterwards, also when a timing fails."""
    from types import SimpleNamespace

    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import native

    flags = SimpleNamespace(cudnn=SimpleNamespace(allow_tf32=False, benchmark=False),
                            cuda=SimpleNamespace(matmul=SimpleNamespace(allow_tf32=False)))
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(backends=flags))
    seen = []

    def timed(torch, problem, repeats, precision, benchmark):
        seen.append((benchmark, torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32))
        return {True: 0.030, False: 0.023}[benchmark]

    monkeypatch.setattr(native, "_time_cudnn_choice", timed)
    assert native.time_cudnn(None, 20, "tf32") == 0.023
    assert seen == [(True, True, True), (False, True, True)]
    assert (flags.cudnn.allow_tf32, flags.cuda.matmul.allow_tf32, flags.cudnn.benchmark) == (False, False, False)

    def fails(torch, problem, repeats, precision, benchmark):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(native, "_time_cudnn_choice", fails)
    with pytest.raises(RuntimeError, match="out of memory"):
        native.time_cudnn(None, 20, "tf32")
    assert (flags.cudnn.allow_tf32, flags.cuda.matmul.allow_tf32) == (False, False)
