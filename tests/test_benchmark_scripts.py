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


def test_the_suite_combines_parts_of_one_run_in_the_suites_order(tmp_path, monkeypatch, capsys):
    """suite.py --combine: the per-layer tables of runs that each measured a part of a suite (a call's time limit),
    joined in the suite's order into one table, with the summary a whole run prints; a layer in two parts, or not of
    the suite, is refused by name, and so are parts of runs in other precisions."""
    import csv
    import math

    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import suite

    fields = ["layer", "shape", "GFLOP", "float16 best", "float16 ms", "float16 cuDNN ms", "float16 ratio",
              "float16 floor ms", "float16 floor by", "float16 % floor", "float16 cuDNN % floor"]

    def part(name, layers):
        path = tmp_path / name
        with path.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(fields)
            for layer, ratio in layers:
                writer.writerow([layer, "1,2,3", "6.0", "wgmma_nhwc:io=float16", "0.02", f"{0.02 / ratio:.6f}",
                                 ratio, "0.01", "copy", "50.0", "40.0"])
        return str(path)

    late = part("b.csv", [("resnet50-3x3-512-512-7", 0.5), ("resnet50-1x1-2048-512-7", 2.0)])
    early = part("a.csv", [("resnet50-conv1", 0.8)])
    early_text = Path(early).read_text()
    out = tmp_path / "all.csv"
    monkeypatch.setattr(sys, "argv", ["suite.py", "--suite", "resnet50", "--combine", late, early, "--csv", str(out)])
    assert suite.main() == 0
    text = capsys.readouterr().out
    assert "resnet50: 3 of its 23 layers, from 2 tables" in text
    geomean = math.exp((math.log(0.5) + math.log(2.0) + math.log(0.8)) / 3)
    assert f"float16         3  {geomean:21.3f}  2.00 (resnet50-1x1-2048-512-7)" in text
    with out.open() as handle:
        combined = list(csv.DictReader(handle))
    assert [r["layer"] for r in combined] == ["resnet50-conv1", "resnet50-1x1-2048-512-7", "resnet50-3x3-512-512-7"]
    assert list(combined[0]) == fields and float(combined[1]["float16 ratio"]) == 2.0

    other = tmp_path / "tf32.csv"
    other.write_text(early_text.replace("float16", "tf32"))
    for argv, message in (([late, late], "resnet50-3x3-512-512-7 is in both"),
                          ([part("c.csv", [("vgg16-conv1_1", 1.0)])], "vgg16-conv1_1 ("),
                          ([late, str(other)], "has other columns than")):
        monkeypatch.setattr(sys, "argv", ["suite.py", "--suite", "resnet50", "--combine", *argv])
        with pytest.raises(SystemExit):
            suite.main()
        assert message in capsys.readouterr().err


def test_ab_pairs_each_winner_of_a_variant_with_its_change(monkeypatch):
    """ab.py: A is each suite winner of the variant as it ran, B the same with --set and --drop applied (or another
    variant's rendering); a B the variant refuses is reported, not run."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import ab

    vgg = BENCHMARKS / "results" / "suite_vgg16_tf32_session58_h200_2026-12-02.csv"
    found, refused = ab.pairs([vgg], "wgmma_nhwc", {"stages": "3", "persistent": "true"}, ["stream_k"], None)
    layers = ("2_1", "2_2", "3_1", "3_2", "3_3", "4_1", "4_2", "4_3", "5_1", "5_2", "5_3")
    assert [label for label, *_ in found] == [f"vgg16-conv{n} tf32" for n in layers] and not refused
    label, problem, a, b = found[-1]  # conv5_3's winner: tile_n 224, stream-K
    assert problem.name == "vgg16-conv5_3" and a[0] == b[0] == "wgmma_nhwc"
    assert a[2].params["stream_k"] and a[2].params["stages"] == 4
    assert not b[2].params["stream_k"] and b[2].params["persistent"] and b[2].params["stages"] == 3
    assert b[2].params["tile_n"] == a[2].params["tile_n"] == 224
    found, refused = ab.pairs([vgg], "wgmma_nhwc", {"stages": "5"}, [], None)  # 5 stages of 256-pixel tiles: too much
    assert [label for label, _ in refused] == [f"vgg16-conv{n} tf32" for n in layers[:5] + ("4_2",)]
    assert "shared memory per block" in refused[0][1] and len(found) == 5
    found, _ = ab.pairs([vgg], "wgmma_halo", {}, [], "wgmma_halo")  # conv1_1 and conv1_2
    assert [label for label, *_ in found] == ["vgg16-conv1_1 tf32", "vgg16-conv1_2 tf32"]


def test_ab_runs_both_sides_in_interleaved_rounds_and_keeps_the_fastest(monkeypatch, tmp_path, capsys):
    """ab.py's loop, with the GPU backend stood in for: every pair runs A and B each round (A first in even rounds),
    the fastest of each is kept, a failed run is listed and makes the exit status 1."""
    from types import SimpleNamespace

    import simflow.backends.gpu as gpu_module

    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import ab

    order = []

    def run(self, job, store, kernel):
        tag = "B" if kernel.params["stages"] == 3 else "A"
        order.append((job.problem.name, tag))
        ms = {"A": 0.2, "B": 0.1}[tag] * (1 + 0.1 * (len(order) % 3))
        bad = job.problem.name == "vgg16-conv5_3" and tag == "B" and len(order) > 40
        return SimpleNamespace(status="wrong" if bad else "passed", reason="bad elements",
                               metrics={} if bad else {"time_ms": ms})

    monkeypatch.setattr(gpu_module.GpuBackend, "__init__", lambda self: None)  # no GPU here
    monkeypatch.setattr(gpu_module.GpuBackend, "precompile", lambda self, kernels, jobs: len(kernels))
    monkeypatch.setattr(gpu_module.GpuBackend, "run", run)
    vgg = BENCHMARKS / "results" / "suite_vgg16_tf32_session58_h200_2026-12-02.csv"
    monkeypatch.setattr(sys, "argv", ["ab.py", str(vgg), "--variant", "wgmma_nhwc", "--set", "stages=3",
                                      "--rounds", "2", "--out", str(tmp_path / "ab.jsonl")])
    assert ab.main() == 1
    text = capsys.readouterr().out
    assert order[:2] == [("vgg16-conv2_1", "A"), ("vgg16-conv2_1", "B")] and order[22:24] == [
        ("vgg16-conv2_1", "B"), ("vgg16-conv2_1", "A")] and len(order) == 44
    assert "B/A over 11: median 0.5" in text and "wrong or failed runs: 1" in text
    assert len((tmp_path / "ab.jsonl").read_text().splitlines()) == 44
