"""Every variant against the float64 reference on a real GPU (marker gpu; skipped without one)."""

from __future__ import annotations

import pytest

from simflow.errors import LimitError
from simflow.job import Job
from simflow.kernels.problems import Problem, get_problem
from simflow.kernels.variants import VARIANTS

pytestmark = [pytest.mark.gpu]

SHAPES = [
    Problem(B=3, C=3, M=5, H=23, W=23, K=5, pad=2, name="odd-padded"),
    Problem(B=2, C=4, M=3, H=37, W=29, K=3, pad=0, name="rect-valid"),
    get_problem("batch3x3"),
    get_problem("fmnist-conv2", batch=6),
    Problem(B=2, C=3, M=32, H=19, W=17, K=3, pad=1, name="m32-padded"),
    Problem(B=3, C=64, M=48, H=13, W=11, K=5, pad=1, name="c64-m48-pad1"),  # wmma_nhwc: C in 32s, M in 16s
    Problem(B=2, C=3, M=16, H=31, W=29, K=7, pad=3, stride=2, name="k7-stride2"),  # a ResNet first layer, small
    Problem(B=2, C=32, M=32, H=15, W=15, K=3, pad=1, stride=2, name="3x3-stride2"),
    Problem(B=3, C=64, M=32, H=14, W=13, K=1, pad=0, stride=2, name="1x1-stride2"),  # a projection shortcut
    Problem(B=3, C=48, M=40, H=12, W=10, K=1, pad=0, name="1x1-hw120"),  # 16-byte copies of 4 pixels, C and M ragged
]


def _configs():
    """Defaults, then each kernel parameter value changed one at a time (streams: test_streams)."""
    for name, variant in VARIANTS.items():
        yield name, {}
        for p in (p for p in variant.params if not p.host):
            for value in p.choices:
                if value != p.default:
                    yield name, {p.name: value}


CONFIGS = list(_configs())


def run(gpu, kernel, batch: int, **options):
    """`kernel` (this rendering, not a new one) as a job of `batch` images on the GPU."""
    job = Job.make(kernel.variant, dict(kernel.params), kernel.problem.with_batch(batch), "gpu", **options)
    return gpu.run(job, None, kernel)


@pytest.fixture(scope="module")
def gpu():
    from simflow.backends.gpu import GpuBackend

    return GpuBackend()


@pytest.mark.parametrize("problem", SHAPES, ids=[p.name for p in SHAPES])
@pytest.mark.parametrize("variant,params", CONFIGS,
                         ids=[f"{v}-{'-'.join(f'{k}={x}' for k, x in p.items()) or 'default'}" for v, p in CONFIGS])
def test_matches_reference(gpu, variant, params, problem):
    try:
        kernel = VARIANTS[variant].render(problem, params)
    except LimitError as exc:
        pytest.skip(f"refused, as it should be: {exc}")
    result = run(gpu, kernel, problem.B, seed=7, warmup=1, repeats=2)
    assert result.status == "passed", result.reason
    assert result.metrics["bad_elements"] == 0 and result.metrics["checked_elements"] == result.metrics.get(
        "checked_elements") > 0 and result.environment["check"] == "full"
    scaled = result.metrics["max_scaled_error"]
    print(f"margin {variant} {kernel.precision} {problem.name}: max |y-ref|/S = {scaled:.3g}")
    registers = [v for k, v in result.metrics.items() if k == "registers" or k.endswith(".registers")]
    assert len(registers) == len(kernel.kernel_names) and min(registers) > 0  # <kernel>.registers with several
    assert result.metrics["time_ms"] > 0


def test_fresh_inputs_each_seed(gpu):
    problem = SHAPES[0]
    kernel = VARIANTS["shared"].render(problem)
    a = run(gpu, kernel, problem.B, seed=1, repeats=1)
    b = run(gpu, kernel, problem.B, seed=2, repeats=1)
    assert a.passed and b.passed
    assert a.metrics["rel_error"] != b.metrics["rel_error"]


def test_every_element_is_checked_on_a_large_problem_and_a_sample_only_when_asked(gpu):
    problem = get_problem("toycnn")
    kernel = VARIANTS["shared"].render(problem)
    result = run(gpu, kernel, 1, repeats=2)
    assert result.passed, result.reason
    assert result.environment["check"] == "full" and result.metrics["checked_elements"] == 256 * 224 * 224
    sampled = run(gpu, kernel, 1, repeats=2, sample_check=True)
    assert sampled.passed and sampled.environment["check"] == "sample" and sampled.metrics["checked_elements"] == 4096


def test_limits_come_from_the_device(gpu):
    assert gpu.limits.sm_count > 0
    assert gpu.limits.smem_per_block_optin >= gpu.limits.smem_per_block


def test_batch_over_grid_limit_is_refused(gpu):
    problem = get_problem("batch3x3", batch=70000)
    result = run(gpu, VARIANTS["global"].render(problem), problem.B, repeats=1)
    assert result.status == "refused"
    assert "grid dimension z" in result.reason


def test_cli_run_json(gpu, capsys):
    import json

    from simflow.cli import main

    code = main(["run", "shared", "--param", "tile=8", "--problem", "fmnist-conv1", "--batch", "2",
                 "--repeats", "3", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["status"] == "passed"
    assert out["metrics"]["gflops"] > 0
    assert out["run_id"] and out["metrics"]["job_wall_s"] > 0


def test_each_launch_of_several_is_timed_alone(gpu, capsys, monkeypatch):
    """A variant of several kernels: each launch's own median as <kernel>.time_ms, shown per kernel in the time_ms
    row of `simflow run`; a single kernel's run has only the whole."""
    from simflow import settings
    from simflow.cli import main

    monkeypatch.setenv("COLUMNS", "200")  # every column: the machine's own $COLUMNS may be narrower
    settings.reset()

    problem = get_problem("resnet50-1x1-512-1024-28-s2").with_batch(4)
    kernel = VARIANTS["mma_nhwc"].render(problem, {})
    result = run(gpu, kernel, 4, warmup=1, repeats=3)
    assert result.status == "passed", result.reason
    parts = {name: result.metrics[f"{name}.time_ms"] for name in kernel.kernel_names}
    assert set(parts) == {"conv2d_mma_nhwc_x", "conv2d_mma_nhwc"} and min(parts.values()) > 0  # _x copies w too
    assert result.units["conv2d_mma_nhwc_x.time_ms"] == "ms"
    single = run(gpu, VARIANTS["shared"].render(problem, {}), 4, warmup=1, repeats=3)
    assert not [name for name in single.metrics if name.endswith(".time_ms")]
    assert main(["run", "mma_nhwc", "--problem", "resnet50-1x1-512-1024-28-s2", "--batch", "4", "--repeats", "3",
                 "--no-store"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.split()[:1] == ["time_ms"])
    assert len(row.split()) == 5  # time_ms, the whole, ms, the two launches


PROGRAMMATIC_CASES = [  # launches after the first programmatic: a copy and a GEMM, three launches, split-K's zeroing
    # and rounding around the GEMM, stream-K, the halo's weight copy, wgmma_nchw's gather and cluster weight copies
    ("wgmma_nhwc", {"precision": "tf32", "persistent": True}, get_problem("resnet50-3x3-256-256-14", batch=4)),
    ("wgmma_nhwc", {"precision": "tf32", "tile_m": 64, "tile_n": 128, "persistent": True},
     get_problem("resnet50-conv1", batch=2)),
    ("wgmma_nhwc", {"io": "float16", "split": 2}, get_problem("resnet50-1x1-2048-512-7", batch=4)),
    ("wgmma_nhwc", {"precision": "tf32", "tile_n": 128, "stream_k": True},
     get_problem("resnet50-3x3-512-512-7", batch=4)),
    ("wgmma_halo", {"tile_m": 64, "tile_n": 512}, get_problem("resnet50-3x3-64-64-56", batch=4)),
    ("wgmma_nchw", {"precision": "tf32", "gather": True, "tile_m": 256},
     get_problem("resnet50-1x1-1024-2048-14-s2", batch=4)),
    ("wgmma_nchw", {"precision": "tf32", "cluster": 4, "tile_m": 256, "tile_n": 64},
     get_problem("resnet50-1x1-1024-256-14", batch=4)),
]


@pytest.mark.parametrize("variant,params,problem", PROGRAMMATIC_CASES,
                         ids=[f"{v}-{'-'.join(f'{k}={x}' for k, x in p.items())}" for v, p, _ in PROGRAMMATIC_CASES])
def test_programmatic_launches_match_the_reference_as_plain_ones_do(gpu, variant, params, problem):
    """Each launch after the first starts before the one before it ends, and waits for it in its kernels: the
    result checks out against the float64 reference, as with every launch after the one before, and the run
    says how it was launched."""
    kernel = VARIANTS[variant].render(problem, params)
    assert [launch.programmatic for launch in kernel.launches(problem.B)][1:] == [True] * (len(kernel.kernel_names) - 1)
    try:
        for on in (True, False):
            gpu.programmatic = on
            result = run(gpu, kernel, problem.B, repeats=5)
            assert result.status == "passed", (on, result.reason)
            assert ("programmatic" in result.environment["timing"]) == (on and gpu.limits.compute_capability >= (9, 0))
    finally:
        gpu.programmatic = True


def test_runs_are_stored_and_diffed(gpu, tmp_path, capsys):
    """simflow run stores a record; two variants diff on the same problem; a sweep runs GPU jobs in a worker."""
    import json

    from simflow.cli import main
    from simflow.results.store import Store

    results = str(tmp_path)
    for variant in ("global", "shared"):
        assert main(["run", variant, "--problem", "fmnist-conv2", "--batch", "64", "--repeats", "5",
                     "--results", results, "--json"]) == 0
    capsys.readouterr()
    assert main(["diff", "variant=global", "variant=shared", "--metrics", "time_ms,gflops", "-f", "json",
                 "--results", results]) == 0
    rows = {r["metric"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows["time_ms"]["A"] > 0 and rows["time_ms"]["mark"] in ("better", "worse", "same")
    sweep = tmp_path / "gpu.toml"
    sweep.write_text('backends = ["gpu"]\nproblems = ["batch3x3"]\nrepeats = 3\n'
                     '[[variants]]\nname = "shared"\ntile = [8, 16]\n')
    assert main(["sweep", str(sweep), "--results", results, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["run"]) == 2 and report["failed"] == [] and report["errors"] == []
    with Store(tmp_path) as store:
        runs = store.runs()
    assert len(runs) == 4 and all(r.status == "passed" and r.environment["gpu"] for r in runs)


def test_profile_stores_counters_under_the_simulators_names(gpu, tmp_path):
    """simflow profile under the real ncu: one launch of each kernel, aligned and raw counters."""
    import shutil

    from simflow.job import Job
    from simflow.run.jobs import run_job

    if not shutil.which("ncu") and not __import__("os").path.exists("/usr/local/cuda/bin/ncu"):
        pytest.skip("no ncu on this machine")
    result = run_job(Job.make("shared", {}, get_problem("batch3x3"), "gpu-ncu"), tmp_path)
    assert result.status == "passed", result.reason
    m = result.metrics
    assert m["gpu_tot_issued_cta"] == 16 and m["gpgpu_n_shmem_bkconflict"] >= 0 and m["gpu_sim_cycle"] > 0
    assert m["gpgpu_n_shmem_insn"] == m["ncu:smsp__inst_executed_op_shared_ld.sum"] + m[
        "ncu:smsp__inst_executed_op_shared_st.sum"] > 0
    assert (tmp_path / "runs" / result.run_id / "ncu.log").is_file()


@pytest.mark.parametrize("variant,params", [("regtile", {}), ("implicit_gemm", {"tile": 64}),
                                            ("im2col_gemm", {"tile": 64}), ("conv_relu_pool", {"precision": "fp16"})])
def test_streams_split_the_batch_and_overlap_copies(gpu, variant, params):
    """streams=4 on 10 images (chunks 3, 3, 2, 2): the host copy of y after the split run is checked against
    the reference; one-stream and copy-alone times come from the same run."""
    problem = get_problem("fmnist-conv2", batch=10)
    kernel = VARIANTS[variant].render(problem, {**params, "streams": 4})
    result = run(gpu, kernel, problem.B, seed=3, warmup=1, repeats=3)
    assert result.status == "passed", result.reason
    m = result.metrics
    assert m["pipeline_ms"] > 0 and m["pipeline_serial_ms"] > 0 and m["h2d_ms"] > 0 and m["d2h_ms"] > 0
    assert m["pipeline_speedup"] == pytest.approx(m["pipeline_serial_ms"] / m["pipeline_ms"])
    assert "pipeline_ms" not in run(gpu, VARIANTS[variant].render(problem, params), problem.B,
                                    repeats=1).metrics  # streams=0: kernels only


REGTILE_GROUPS = [  # (problem, params): channel groups over blockIdx.z, shared or constant weights, ragged rows
    (Problem(B=5, C=12, M=24, H=22, W=22, K=7, name="k7-c12-m24"), {"channels": 8, "weights": "shared", "rows": 4}),
    (Problem(B=5, C=12, M=24, H=22, W=22, K=7, name="k7-c12-m24"), {"channels": 4, "outputs": 2, "images": 2}),
    (Problem(B=3, C=5, M=36, H=19, W=17, K=5, pad=2, name="k5-c5-m36-pad2"),
     {"channels": 12, "outputs": 1, "rows": 16, "weights": "shared"})]


@pytest.mark.parametrize("problem,params", REGTILE_GROUPS,
                         ids=[f"{p.name}-{'-'.join(f'{k}={v}' for k, v in q.items())}" for p, q in REGTILE_GROUPS])
def test_regtile_channel_groups_match_reference(gpu, problem, params):
    """regtile with channels < M: each block computes one group of output channels for its rows."""
    kernel = VARIANTS["regtile"].render(problem, params)
    result = run(gpu, kernel, problem.B, seed=5, warmup=1, repeats=2)
    assert result.status == "passed", result.reason
    assert result.metrics["bad_elements"] == 0 and result.environment["check"] == "full"


HALF_IO_SHAPES = [SHAPES[-1], Problem(B=2, C=256, M=128, H=28, W=28, K=1, name="1x1-256-128-28")]


@pytest.mark.parametrize("problem", HALF_IO_SHAPES, ids=[p.name for p in HALF_IO_SHAPES])
@pytest.mark.parametrize("params", [{}, {"tile_m": 64, "bk": 16}, {"tile_n": 64, "stages": 4}, {"stages": 2},
                                    {"split": 2}, {"split": 4, "bk": 16}])
def test_mma_nchw_half_io_matches_reference(gpu, params, problem):
    """io=float16: half x and w in, half y out, against the float64 reference of the same half values; the
    bytes behind GB/s are halves."""
    kernel = VARIANTS["mma_nchw"].render(problem, {"precision": "fp16", "io": "float16", **params})
    result = run(gpu, kernel, problem.B, seed=5, warmup=1, repeats=2)
    assert result.status == "passed", result.reason
    assert result.metrics["bad_elements"] == 0 and result.environment["check"] == "full"
    gbps = problem.min_bytes("float16") / (result.metrics["time_ms"] * 1e-3) / 1e9
    assert result.metrics["gbps"] == pytest.approx(gbps)


NHWC_HALF_SHAPES = [Problem(B=2, C=40, M=24, H=12, W=10, K=3, pad=1, name="3x3-ragged-hw120"),
                    Problem(B=3, C=32, M=48, H=16, W=15, K=3, pad=1, stride=2, name="3x3-stride2-hw64"),
                    Problem(B=3, C=64, M=40, H=7, W=7, K=3, pad=1, name="3x3-hw49"),  # odd HW: one half a lane
                    Problem(B=3, C=64, M=32, H=13, W=13, K=1, stride=2, name="1x1-stride2-hw49")]


NHWC_HALF_CONFIGS = [*(("mma_nhwc", params) for params in ({}, {"tile_n": 256, "bk": 64}, {"stages": 2}, {"stages": 4},
                                                          {"split": 2}, {"split": 4, "tile_n": 256})),
                     *(("wgmma_nhwc", params) for params in ({}, {"tile_n": 128, "stages": 3}, {"split": 2},
                                                            {"split": 4, "tile_n": 128}, {"tile_n": 192},
                                                            {"tile_n": 224, "stages": 3}))]


@pytest.mark.parametrize("problem", NHWC_HALF_SHAPES, ids=[p.name for p in NHWC_HALF_SHAPES])
@pytest.mark.parametrize("variant,params", NHWC_HALF_CONFIGS,
                         ids=[f"{v}-{'-'.join(f'{k}={x}' for k, x in p.items()) or 'default'}"
                              for v, p in NHWC_HALF_CONFIGS])
def test_nhwc_half_io_matches_reference(gpu, variant, params, problem):
    kernel = VARIANTS[variant].render(problem, {"precision": "fp16", "io": "float16", **params})
    result = run(gpu, kernel, problem.B, seed=6, warmup=1, repeats=2)
    assert result.status == "passed", result.reason
    assert result.metrics["bad_elements"] == 0 and result.environment["check"] == "full"


WEIGHT_COPY_SHAPES = [*(Problem(B=2, C=40, M=32, H=9, W=9, K=k, pad=k // 2, name=f"{k}x{k}-c40")
                        for k in (1, 2, 7, 11)),
                      Problem(B=2, C=41, M=32, H=9, W=9, K=3, pad=1, name="3x3-c41")]  # odd C: half w a half a lane


@pytest.mark.parametrize("problem", WEIGHT_COPY_SHAPES, ids=[p.name for p in WEIGHT_COPY_SHAPES])
@pytest.mark.parametrize("variant,params", [("mma_nhwc", {"precision": "tf32"}), ("mma_nchw", {"precision": "fp16"}),
                                            ("wgmma_nhwc", {"io": "float16"}), ("wmma_nhwc", {})])
def test_weight_copy_transposes_every_filter_size(gpu, variant, params, problem):
    """The _w kernel (a warp per 32 channels of an output channel, 8 or 1 warps a block by K; mma_nhwc's and
    wgmma_nhwc's 8-warp copy in the x copy's blocks past the images): 40 channels are a whole and a ragged chunk,
    K*K even (bank skew) and 7x7, 11x11 (one warp a block)."""
    try:
        kernel = VARIANTS[variant].render(problem, params)
    except LimitError as exc:
        pytest.skip(f"refused, as it should be: {exc}")
    assert any(launch.kernel.endswith("_w") or (launch.kernel.endswith("_x") and "wh" in launch.args)
               for launch in kernel.launches(problem.B))
    result = run(gpu, kernel, problem.B, seed=10, warmup=1, repeats=2)
    assert result.status == "passed", result.reason
    assert result.metrics["bad_elements"] == 0 and result.environment["check"] == "full"


TF32_IN_PLACE_SHAPES = [Problem(B=2, C=2048, M=72, H=7, W=7, K=1, name="1x1-c2048-hw49"),  # a long k run
                        Problem(B=3, C=64, M=40, H=13, W=13, K=1, stride=2, name="1x1-stride2-c64")]
TF32_IN_PLACE_CONFIGS = [("wgmma_nhwc", {"tile_n": 64}), ("wgmma_nhwc", {"stream_k": True}), ("wgmma_nchw", {}),
                         ("mma_nhwc", {"split": 2}), ("mma_nchw", {})]


@pytest.mark.parametrize("problem", TF32_IN_PLACE_SHAPES, ids=[p.name for p in TF32_IN_PLACE_SHAPES])
@pytest.mark.parametrize("variant,params", TF32_IN_PLACE_CONFIGS,
                         ids=[f"{v}-{'-'.join(f'{k}={x}' for k, x in p.items()) or 'default'}"
                              for v, p in TF32_IN_PLACE_CONFIGS])
def test_tf32_weights_read_in_place_stay_well_inside_the_tolerance(gpu, variant, params, problem):
    """TF32 on a 1x1 layer reads float w where it lies (no _w kernel): the tensor cores truncate it to TF32 where
    the copy rounded, so the error's bias grows with C; it stays under a quarter of the check's atol (4e-3 S)."""
    try:
        kernel = VARIANTS[variant].render(problem, {"precision": "tf32", **params})
    except LimitError as exc:
        pytest.skip(f"refused, as it should be: {exc}")
    assert not any(launch.kernel.endswith("_w") for launch in kernel.launches(problem.B))
    result = run(gpu, kernel, problem.B, seed=11, warmup=1, repeats=2)
    assert result.status == "passed", result.reason
    assert result.metrics["bad_elements"] == 0 and result.environment["check"] == "full"
    assert result.metrics["max_scaled_error"] < 1e-3


WGMMA_SPLIT_CONFIGS = [{"precision": "tf32", "split": 2}, {"precision": "tf32", "split": 4, "tile_n": 128, "stages": 3},
                       {"split": 8}]  # 3x3-hw49 has 9 k steps: blocks 5-7 of split 8 have none and add zeros


@pytest.mark.parametrize("problem", NHWC_HALF_SHAPES, ids=[p.name for p in NHWC_HALF_SHAPES])
@pytest.mark.parametrize("params", WGMMA_SPLIT_CONFIGS,
                         ids=["-".join(f"{k}={v}" for k, v in p.items()) for p in WGMMA_SPLIT_CONFIGS])
def test_wgmma_nhwc_split_k_matches_reference(gpu, params, problem):
    """Split-K on wgmma: float y added into by the splits (TF32, fp16 inputs), odd HW, stride 2, empty k ranges."""
    kernel = VARIANTS["wgmma_nhwc"].render(problem, params)
    assert kernel.launches(problem.B)[-1].grid[2] == params["split"]
    result = run(gpu, kernel, problem.B, seed=9, warmup=1, repeats=2)
    assert result.status == "passed", result.reason
    assert result.metrics["bad_elements"] == 0 and result.environment["check"] == "full"


STREAM_K_SHAPES = [*NHWC_HALF_SHAPES[2:],  # 2 or 3 tiles of 9 k steps (1x1: 2): most of 132 blocks get none or one
                   Problem(B=8, C=96, M=200, H=20, W=20, K=3, pad=1, name="3x3-m200"),  # pieces cross tile ends
                   Problem(B=16, C=64, M=256, H=28, W=28, K=1, name="1x1-many-tiles")]  # a block takes whole tiles
STREAM_K_CONFIGS = [{"precision": "tf32", "stream_k": True}, {"precision": "tf32", "tile_n": 128, "stream_k": True},
                    {"stream_k": True, "tile_n": 128, "stages": 3}, {"io": "float16", "tile_n": 64, "stream_k": True},
                    {"io": "float16", "tile_n": 192, "stream_k": True},
                    {"precision": "tf32", "tile_n": 224, "stream_k": True}]  # m64n224: 112 sums a thread


@pytest.mark.parametrize("problem", STREAM_K_SHAPES, ids=[p.name for p in STREAM_K_SHAPES])
@pytest.mark.parametrize("params", STREAM_K_CONFIGS,
                         ids=["-".join(f"{k}={v}" for k, v in p.items()) for p in STREAM_K_CONFIGS])
def test_wgmma_nhwc_stream_k_matches_reference(gpu, params, problem):
    """Stream-K on wgmma: a capped persistent grid whose even k ranges end inside tiles, are empty, or span whole
    tiles; float y, and half y from float sums."""
    kernel = VARIANTS["wgmma_nhwc"].render(problem, params)
    assert kernel.launches(problem.B)[-1 - (params.get("io") == "float16")].persistent == 1
    result = run(gpu, kernel, problem.B, seed=10, warmup=1, repeats=2)
    assert result.status == "passed", result.reason
    assert result.metrics["bad_elements"] == 0 and result.environment["check"] == "full"


PACKED_TAP_SHAPES = [Problem(B=3, C=3, M=5, H=23, W=23, K=5, pad=2, name="odd-padded"),  # 8 channels a tap
                     Problem(B=2, C=4, M=3, H=37, W=29, K=3, pad=0, name="rect-valid"),
                     Problem(B=2, C=3, M=16, H=31, W=29, K=7, pad=3, stride=2, name="k7-stride2"),
                     Problem(B=2, C=32, M=32, H=15, W=15, K=3, pad=1, stride=2, name="3x3-stride2"),  # fp16: 2 taps
                     Problem(B=3, C=16, M=48, H=20, W=19, K=5, pad=2, name="c16-5x5"),  # 25 taps: a last part-step
                     Problem(B=2, C=12, M=72, H=17, W=17, K=3, pad=1, name="c12-3x3")]  # 12 channels in 16
PACKED_TAP_CONFIGS = [{}, {"precision": "tf32"}, {"precision": "bf16"}, {"io": "float16"},
                      {"io": "bfloat16", "precision": "bf16"}, {"precision": "tf32", "stream_k": True},
                      {"io": "float16", "persistent": True, "tile_n": 128}, {"split": 2},
                      {"precision": "tf32", "tile_m": 64, "stages": 5}, {"io": "float16", "split": 4}]


@pytest.mark.parametrize("problem", PACKED_TAP_SHAPES, ids=[p.name for p in PACKED_TAP_SHAPES])
@pytest.mark.parametrize("params", PACKED_TAP_CONFIGS,
                         ids=["-".join(f"{k}={v}" for k, v in p.items()) or "default" for p in PACKED_TAP_CONFIGS])
def test_wgmma_nhwc_packs_the_taps_of_few_channels(gpu, params, problem):
    """C at most half a k step on a K x K layer: a k step holds several taps, each 16-byte part of a row from its
    own tap (past the last tap, zeros); the same checks as benchmarks/results/packed_taps_check_session42_*.log."""
    kernel = VARIANTS["wgmma_nhwc"].render(problem, params)
    tf32 = kernel.params["precision"] == "tf32"
    assert ("TAPS = BK / CP" in kernel.source) == (problem.C * (4 if tf32 else 2) <= 64)  # C=32 TF32: a whole step
    result = run(gpu, kernel, problem.B, seed=7, warmup=1, repeats=2)
    assert result.status == "passed", result.reason
    assert result.metrics["bad_elements"] == 0 and result.environment["check"] == "full"


WGMMA_TILE_M64_SHAPES = [*NHWC_HALF_SHAPES[:3], STREAM_K_SHAPES[2],  # M < 64 (zero rows), stride 2; M = 200: 4 tiles
                         Problem(B=4, C=64, M=64, H=17, W=19, K=3, pad=1, name="3x3-m64-hw323")]  # the layer it is for
WGMMA_TILE_M64_CONFIGS = [{}, {"tile_n": 128}, {"tile_n": 64, "stages": 3}, {"precision": "tf32"},
                          {"precision": "tf32", "tile_n": 128, "stages": 6}, {"io": "float16"},
                          {"io": "float16", "tile_n": 128, "split": 2}, {"precision": "tf32", "split": 4},
                          {"precision": "tf32", "tile_n": 128, "stream_k": True}, {"io": "float16", "stream_k": True},
                          {"io": "float16", "tile_n": 192},  # 96 pixels a warpgroup
                          {"precision": "tf32", "tile_n": 224, "stages": 5}]  # 112 pixels a warpgroup


@pytest.mark.parametrize("problem", WGMMA_TILE_M64_SHAPES, ids=[p.name for p in WGMMA_TILE_M64_SHAPES])
@pytest.mark.parametrize("params", WGMMA_TILE_M64_CONFIGS,
                         ids=["-".join(f"{k}={v}" for k, v in p.items()) or "default" for p in WGMMA_TILE_M64_CONFIGS])
def test_wgmma_nhwc_64_channel_tiles_match_reference(gpu, params, problem):
    """tile_m=64: both warpgroups on one 64-channel A tile, each on its half of the pixels (its own B descriptor and
    its own columns in the epilogue); float and half y, split-K and stream-K, M below, at and across 64."""
    kernel = VARIANTS["wgmma_nhwc"].render(problem, {"tile_m": 64, **params})
    result = run(gpu, kernel, problem.B, seed=12, warmup=1, repeats=2)
    assert result.status == "passed", result.reason
    assert result.metrics["bad_elements"] == 0 and result.environment["check"] == "full"


WGMMA_PERSISTENT_CONFIGS = [{"io": "float16", "persistent": True, "tile_n": 64},
                            {"io": "float16", "persistent": True, "tile_n": 128, "stages": 3},
                            {"io": "float16", "persistent": True, "tile_m": 64, "tile_n": 128, "stages": 3},
                            {"precision": "tf32", "persistent": True, "tile_n": 128},
                            {"persistent": True, "tile_m": 64, "stages": 5},
                            {"io": "float16", "persistent": True, "tile_n": 192},  # m64n192: 96 sums a thread
                            {"precision": "tf32", "persistent": True, "tile_n": 192, "stages": 3},
                            {"io": "float16", "persistent": True, "tile_n": 224, "stages": 3},
                            {"precision": "tf32", "persistent": True, "tile_n": 224, "stages": 5}]


@pytest.mark.parametrize("problem", WGMMA_TILE_M64_SHAPES, ids=[p.name for p in WGMMA_TILE_M64_SHAPES])
@pytest.mark.parametrize("params", WGMMA_PERSISTENT_CONFIGS,
                         ids=["-".join(f"{k}={v}" for k, v in p.items()) for p in WGMMA_PERSISTENT_CONFIGS])
def test_wgmma_nhwc_persistent_matches_reference(gpu, params, problem):
    """persistent: capped grids whose blocks take several tiles (or one, or none), the pipeline running on from
    one tile into the next; half y through its own output tile, float y from registers; M below 64, stride 2."""
    kernel = VARIANTS["wgmma_nhwc"].render(problem, params)
    assert kernel.launches(problem.B)[-1].persistent == 1
    result = run(gpu, kernel, problem.B, seed=13, warmup=1, repeats=2)
    assert result.status == "passed", result.reason
    assert result.metrics["bad_elements"] == 0 and result.environment["check"] == "full"


WGMMA_NCHW_SHAPES = [HALF_IO_SHAPES[1],  # 784 pixels: a 128-pixel tile spans two images
                     Problem(B=3, C=64, M=72, H=14, W=14, K=1, name="1x1-hw196"),  # H*W % 8 == 4: 8-byte half copies
                     Problem(B=1, C=96, M=300, H=8, W=8, K=1, name="1x1-m300-b1")]  # C, M ragged; one tile of pixels
WGMMA_NCHW_CONFIGS = [{"io": "float16"}, {"io": "float16", "tile_m": 256}, {"io": "float16", "tile_n": 64},
                      {"io": "float16", "tile_m": 64, "tile_n": 64, "stages": 3}, {}, {"tile_m": 256, "stages": 3},
                      {"precision": "tf32"}, {"precision": "tf32", "tile_m": 256, "tile_n": 64, "stages": 5},
                      {"io": "float16", "persistent": True}, {"precision": "tf32", "tile_n": 64, "persistent": True},
                      {"tile_m": 64, "tile_n": 64, "stages": 3, "persistent": True},
                      # three warpgroups (384 threads): 48 weight rows a pass, so a 128-row tile's last pass is partial
                      {"io": "float16", "tile_n": 192}, {"io": "float16", "tile_n": 192, "tile_m": 64, "stages": 6},
                      {"io": "float16", "tile_n": 192, "persistent": True}, {"precision": "tf32", "tile_n": 192},
                      {"tile_n": 192, "tile_m": 64, "stages": 3, "persistent": True}]


@pytest.mark.parametrize("problem", WGMMA_NCHW_SHAPES, ids=[p.name for p in WGMMA_NCHW_SHAPES])
@pytest.mark.parametrize("params", WGMMA_NCHW_CONFIGS,
                         ids=["-".join(f"{k}={v}" for k, v in p.items()) or "default" for p in WGMMA_NCHW_CONFIGS])
def test_wgmma_nchw_matches_reference(gpu, params, problem):
    """The transposed product (x's pixel rows the register A operand) on tiles that span images, ragged C and M,
    half and float x, both tile shapes."""
    kernel = VARIANTS["wgmma_nchw"].render(problem, params)
    result = run(gpu, kernel, problem.B, seed=8, warmup=1, repeats=2)
    assert result.status == "passed", result.reason
    assert result.metrics["bad_elements"] == 0 and result.environment["check"] == "full"


RAGGED_K_SHAPES = [Problem(B=3, C=200, M=104, H=12, W=12, K=1, name="1x1-c200-m104"),  # 8 channels in the last step
                   Problem(B=2, C=72, M=40, H=16, W=16, K=1, name="1x1-c72-m40"),
                   Problem(B=2, C=1000, M=72, H=8, W=8, K=1, name="1x1-c1000-m72")]  # 16 steps: weights rotate
RAGGED_K_CONFIGS = [{"io": "float16"}, {"io": "float16", "tile_n": 64, "stages": 6, "persistent": True},
                    {"io": "bfloat16", "precision": "bf16", "tile_n": 192}, {"precision": "tf32"},
                    {"precision": "tf32", "tile_m": 64, "tile_n": 64, "persistent": True},
                    {"io": "float16", "tile_m": 64, "tile_n": 64, "persistent": True}]


@pytest.mark.parametrize("problem", RAGGED_K_SHAPES, ids=[p.name for p in RAGGED_K_SHAPES])
@pytest.mark.parametrize("params", RAGGED_K_CONFIGS,
                         ids=["-".join(f"{k}={v}" for k, v in p.items()) for p in RAGGED_K_CONFIGS])
def test_wgmma_nchw_reads_ragged_weights_in_place(gpu, params, problem):
    """C no multiple of a k step: w read where it lies, the weight copies past C zero-filled (no _w launch), with
    the weights rotating through the stages or kept stationary."""
    kernel = VARIANTS["wgmma_nchw"].render(problem, params)
    assert len(kernel.launches(problem.B)) == 1
    result = run(gpu, kernel, problem.B, seed=14, warmup=1, repeats=2)
    assert result.status == "passed", result.reason
    assert result.metrics["bad_elements"] == 0 and result.environment["check"] == "full"


SINGLE_PIXEL_SHAPES = [Problem(B=3, C=64, M=72, H=7, W=7, K=1, name="1x1-hw49"),
                       Problem(B=2, C=48, M=40, H=13, W=13, K=1, stride=2, name="1x1-stride2-hw49")]
SINGLE_PIXEL_CONFIGS = [{"precision": "tf32"}, {"precision": "tf32", "tile_m": 256, "stages": 3}, {},
                        {"precision": "tf32", "tile_n": 64, "persistent": True}, {"precision": "tf32", "tile_n": 192}]


@pytest.mark.parametrize("problem", SINGLE_PIXEL_SHAPES, ids=[p.name for p in SINGLE_PIXEL_SHAPES])
@pytest.mark.parametrize("params", SINGLE_PIXEL_CONFIGS,
                         ids=["-".join(f"{k}={v}" for k, v in p.items()) or "default" for p in SINGLE_PIXEL_CONFIGS])
def test_wgmma_nchw_copies_single_pixels(gpu, params, problem):
    """H*W % 4 != 0 and stride 2: x copied one float a pixel, each from its own window position; y a float a store."""
    kernel = VARIANTS["wgmma_nchw"].render(problem, params)
    result = run(gpu, kernel, problem.B, seed=12, warmup=1, repeats=2)
    assert result.status == "passed", result.reason
    assert result.metrics["bad_elements"] == 0 and result.environment["check"] == "full"


GATHER_SHAPES = [Problem(B=3, C=64, M=72, H=28, W=28, K=1, stride=2, name="1x1-stride2-hw196"),  # 196 % 8 == 4
                 Problem(B=2, C=48, M=40, H=13, W=13, K=1, stride=2, name="1x1-stride2-hw49"),  # odd: scalar stores
                 Problem(B=3, C=96, M=300, H=7, W=7, K=1, name="1x1-hw49-m300")]  # stride 1, ragged C and M
GATHER_CONFIGS = [{"io": "float16", "gather": True}, {"io": "float16", "gather": True, "tile_n": 64, "stages": 6},
                  {"io": "float16", "gather": True, "tile_m": 256, "persistent": True},
                  {"precision": "tf32", "gather": True}, {"precision": "tf32", "gather": True, "tile_m": 256,
                                                          "tile_n": 64, "persistent": True},
                  {"gather": True, "tile_m": 64, "tile_n": 64, "stages": 3},
                  {"io": "float16", "gather": True, "tile_n": 192, "persistent": True}]


@pytest.mark.parametrize("problem", GATHER_SHAPES, ids=[p.name for p in GATHER_SHAPES])
@pytest.mark.parametrize("params", GATHER_CONFIGS,
                         ids=["-".join(f"{k}={v}" for k, v in p.items()) for p in GATHER_CONFIGS])
def test_wgmma_nchw_gathers_strided_and_ragged_pixels(gpu, params, problem):
    """gather: a first launch copies the pixels the layer reads into dense rows padded to 16 bytes; the GEMM's
    tiles span the padding and images, and only each image's HW pixels are stored (8-, 4- and 1-pixel stores)."""
    kernel = VARIANTS["wgmma_nchw"].render(problem, params)
    assert [launch.kernel for launch in kernel.launches(problem.B)][-2:] == ["conv2d_wgmma_nchw_x",
                                                                             "conv2d_wgmma_nchw"]
    result = run(gpu, kernel, problem.B, seed=13, warmup=1, repeats=2)
    assert result.status == "passed", result.reason
    assert result.metrics["bad_elements"] == 0 and result.environment["check"] == "full"


SPLIT_CASES = [  # (problem, params): blocks over 1/split of the k steps each, adding into y zeroed first
    (Problem(B=3, C=1024, M=136, H=7, W=7, K=1, name="1x1-c1024-m136-hw49"), {"precision": "tf32", "split": 4}),
    (Problem(B=3, C=1024, M=136, H=7, W=7, K=1, name="1x1-c1024-m136-hw49"),
     {"precision": "tf32", "split": 2, "tile_m": 256, "tile_n": 64}),
    (Problem(B=2, C=512, M=200, H=14, W=14, K=1, name="1x1-c512-m200-hw196"),  # 4-float atomic adds
     {"precision": "tf32", "split": 2, "stages": 6}),
    (Problem(B=2, C=512, M=200, H=14, W=14, K=1, name="1x1-c512-m200-hw196"), {"split": 4}),  # fp16 from float x
    (Problem(B=2, C=256, M=72, H=13, W=13, K=1, stride=2, name="1x1-c256-stride2"),
     {"precision": "tf32", "split": 2, "gather": True}),
    (Problem(B=2, C=512, M=200, H=14, W=14, K=1, name="1x1-c512-m200-hw196"), {"precision": "tf32", "split": 2,
                                                                                  "tile_n": 192})]


@pytest.mark.parametrize("problem,params", SPLIT_CASES,
                         ids=[f"{p.name}-{'-'.join(f'{k}={v}' for k, v in q.items())}" for p, q in SPLIT_CASES])
def test_wgmma_nchw_split_k_adds_into_y(gpu, problem, params):
    """split-K: each tile's k steps shared by `split` blocks (gridDim.z), their sums added into y (zeroed by a first
    launch) by float and float4 atomics; with the gather and the weight copy before it."""
    kernel = VARIANTS["wgmma_nchw"].render(problem, params)
    launches = kernel.launches(problem.B)
    assert launches[-2].kernel == "conv2d_wgmma_nchw_zero" and launches[-1].grid[2] == params["split"]
    result = run(gpu, kernel, problem.B, seed=16, warmup=1, repeats=2)
    assert result.status == "passed", result.reason
    assert result.metrics["bad_elements"] == 0 and result.environment["check"] == "full"


@pytest.mark.parametrize("problem,params", SPLIT_CASES,
                         ids=[f"{p.name}-{'-'.join(f'{k}={v}' for k, v in q.items())}" for p, q in SPLIT_CASES])
def test_wgmma_nchw_split_k_sums_in_a_cluster(gpu, problem, params):
    """reduce=cluster: the split's blocks of a tile are one cluster (gridDim.z), each summing its share of the tile's
    rows from every block's shared memory (float and float4 loads across the cluster): no zeroing launch."""
    kernel = VARIANTS["wgmma_nchw"].render(problem, {**params, "reduce": "cluster"})
    launches = kernel.launches(problem.B)
    assert launches[-1].grid[2] == params["split"] and not any(launch.kernel.endswith("_zero") for launch in launches)
    assert "__cluster_dims__(1, 1, SPLIT)" in kernel.source and "atomicAdd" not in kernel.source
    result = run(gpu, kernel, problem.B, seed=16, warmup=1, repeats=2)
    assert result.status == "passed", result.reason
    assert result.metrics["bad_elements"] == 0 and result.environment["check"] == "full"


CLUSTER_CASES = [  # (problem, params): pixel tiles in clusters of 2 or 4 sharing each weight tile by multicast copies
    (Problem(B=3, C=1024, M=136, H=7, W=7, K=1, name="1x1-c1024-m136-hw49"),  # 32 k steps, 2 channel tiles
     {"precision": "tf32", "cluster": 2}),
    (Problem(B=3, C=1024, M=136, H=7, W=7, K=1, name="1x1-c1024-m136-hw49"),
     {"precision": "tf32", "cluster": 4, "tile_m": 256, "tile_n": 64, "stages": 5}),
    (Problem(B=3, C=200, M=104, H=12, W=12, K=1, name="1x1-c200-m104-b3"),  # ragged C, M; 3 pixel tiles: one idle
     {"precision": "tf32", "cluster": 2, "tile_m": 112, "tile_n": 192}),
    (Problem(B=2, C=72, M=40, H=16, W=16, K=1, name="1x1-c72-m40"),  # 3 k steps, 3 stages; 4 pixel tiles, 1 cluster
     {"precision": "tf32", "cluster": 4, "tile_m": 64, "stages": 3}),
    (Problem(B=2, C=256, M=72, H=13, W=13, K=1, stride=2, name="1x1-c256-stride2"),  # after the dense copy
     {"precision": "tf32", "cluster": 2, "gather": True, "stages": 6})]


@pytest.mark.parametrize("problem,params", CLUSTER_CASES,
                         ids=[f"{p.name}-" + "-".join(f"{k}={v}" for k, v in c.items()) for p, c in CLUSTER_CASES])
def test_wgmma_nchw_clusters_share_the_weights(gpu, problem, params):
    """cluster > 1: the weights laid out as the stages hold them (a `_wi` launch), each block of a cluster copying
    its share of every k step's weight tile into all of them; blocks past the last pixel tile compute zeros."""
    kernel = VARIANTS["wgmma_nchw"].render(problem, params)
    launches = kernel.launches(problem.B)
    assert launches[0].kernel == "conv2d_wgmma_nchw_wi" and launches[-1].grid[0] % params["cluster"] == 0
    result = run(gpu, kernel, problem.B, seed=17, warmup=1, repeats=2)
    assert result.status == "passed", result.reason
    assert result.metrics["bad_elements"] == 0 and result.environment["check"] == "full"


PERSISTENT_CASES = [  # (problem, params): weight-stationary (2 channel tiles; 1) and rotating weights (10 k steps)
    (Problem(B=64, C=160, M=72, H=28, W=28, K=1, name="1x1-c160-m72-b64"),
     {"io": "float16", "tile_m": 64, "tile_n": 64, "persistent": True}),
    (Problem(B=64, C=160, M=72, H=28, W=28, K=1, name="1x1-c160-m72-b64"),
     {"precision": "tf32", "stages": 3, "persistent": True}),
    (Problem(B=32, C=640, M=200, H=28, W=28, K=1, name="1x1-c640-m200-b32"), {"io": "float16", "persistent": True})]


@pytest.mark.parametrize("problem,params", PERSISTENT_CASES,
                         ids=[f"{p.name}-{'-'.join(f'{k}={v}' for k, v in q.items())}" for p, q in PERSISTENT_CASES])
def test_persistent_wgmma_nchw_loops_over_tiles(gpu, problem, params):
    """persistent: as many blocks as the GPU holds (a multiple of the channel tiles when each keeps one channel
    tile's weights), each over several tiles with the pipeline running on across them; ragged M."""
    kernel = VARIANTS["wgmma_nchw"].render(problem, params)
    gemm = kernel.launches(problem.B)[-1]
    result = run(gpu, kernel, problem.B, seed=11, warmup=1, repeats=2)
    assert result.status == "passed", result.reason
    assert result.metrics["bad_elements"] == 0 and result.environment["check"] == "full"
    prefix = "conv2d_wgmma_nchw." if len(kernel.kernel_names) > 1 else ""
    held = gpu.limits.sm_count * result.metrics[prefix + "blocks_per_sm"]
    assert result.metrics[prefix + "grid_blocks"] == held // gemm.persistent * gemm.persistent < gemm.grid[0]


def test_mma_nchw_half_io_streams_copy_half_tensors(gpu):
    """streams with io=float16: the page-locked host copies are half, and the split run's y passes the check."""
    problem = Problem(B=6, C=48, M=40, H=12, W=10, K=1, name="1x1-hw120-b6")
    kernel = VARIANTS["mma_nchw"].render(problem, {"precision": "fp16", "io": "float16", "streams": 2})
    result = run(gpu, kernel, problem.B, seed=2, warmup=1, repeats=2)
    assert result.status == "passed", result.reason
    assert result.metrics["h2d_gbps"] == pytest.approx(problem.B * 48 * 120 * 2 / (result.metrics["h2d_ms"] * 1e6))


def test_more_streams_than_images_is_refused(gpu):
    problem = get_problem("fmnist-conv2", batch=2)
    result = run(gpu, VARIANTS["regtile"].render(problem, {"streams": 4}), problem.B, repeats=1)
    assert result.status == "refused" and "streams" in result.reason and "the batch, 2" in result.reason


# wgmma_halo: ragged C (past a k step) and M (past a tile), 5x5 and unpadded filters, tiles that span output rows
# (56 + 4 slots a row) and rows longer than a tile (224 + 4), an image's last tile part-empty.
HALO_SHAPES = [Problem(B=3, C=13, M=37, H=9, W=20, K=3, pad=1, name="odd-3x3"),
               Problem(B=2, C=21, M=70, H=12, W=16, K=5, pad=2, name="odd-5x5"),
               Problem(B=2, C=9, M=64, H=10, W=12, K=3, pad=0, name="unpadded"),
               Problem(B=2, C=64, M=64, H=17, W=56, K=3, pad=1, name="rows-56"),
               Problem(B=1, C=16, M=130, H=5, W=224, K=3, pad=1, name="rows-224")]
HALO_CONFIGS = [{}, {"tile_m": 64, "tile_n": 512}, {"tile_m": 256, "tile_n": 128, "stages": 2},
                {"tile_m": 64, "tile_n": 128, "bk": 16}, {"tile_n": 128, "stages": 4}, {"bk": 16, "stages": 2},
                {"tile_m": 64, "tile_n": 128, "stages": 2}]


@pytest.mark.parametrize("problem", HALO_SHAPES, ids=[p.name for p in HALO_SHAPES])
@pytest.mark.parametrize("params", HALO_CONFIGS,
                         ids=["-".join(f"{k}={v}" for k, v in p.items()) or "default" for p in HALO_CONFIGS])
def test_wgmma_halo_matches_reference(gpu, params, problem):
    """Every tap a shifted read of one x tile: the zero slots between rows stand for the padding on both sides."""
    try:
        kernel = VARIANTS["wgmma_halo"].render(problem, params)
    except LimitError as exc:
        pytest.skip(f"refused, as it should be: {exc}")
    result = run(gpu, kernel, problem.B, seed=9, warmup=1, repeats=2)
    assert result.status == "passed", result.reason
    assert result.metrics["bad_elements"] == 0 and result.environment["check"] == "full"


# ---- the GPU reference catches injected faults at every size and precision ---------------------------

FAULT_PROBLEMS = [get_problem("batch3x3"), get_problem("fmnist-conv2", batch=100),
                  Problem(B=1, C=256, M=256, H=228, W=228, K=5, name="toycnn")]  # 12.8 M outputs


def _inject(kind: str, y, ref, scale, tolerance, rng) -> None:
    import numpy as np

    if kind == "zeroed element":  # one a zero moves by more than the tolerance (see test_reference)
        visible = np.flatnonzero(np.abs(ref) > 2 * (tolerance.atol * scale + tolerance.rtol * np.abs(ref)))
        y.flat[int(rng.choice(visible))] = 0.0
    elif kind == "zeroed row":
        y[0, y.shape[1] - 1, y.shape[2] // 2, :] = 0.0
    elif kind == "NaN":
        y.flat[int(rng.integers(y.size))] = np.nan
    else:  # off-by-one shift
        y[..., 1:] = y[..., :-1].copy()


@pytest.mark.parametrize("problem", FAULT_PROBLEMS, ids=[p.name for p in FAULT_PROBLEMS])
def test_injected_faults_are_caught_by_the_gpu_reference(gpu, problem):
    """The check judged on the GPU gives the host's verdict, figure for figure, on right outputs and on
    injected faults in every precision, for fp32 and fp16 outputs and a pooled output."""
    import dataclasses

    import numpy as np
    import pycuda.driver as drv

    from simflow.kernels.reference import TOLERANCE, judge, make_inputs, reference_and_scale

    x, w = make_inputs(problem, 3)
    device = {"x": drv.to_device(x), "w": drv.to_device(w)}
    caught = 0
    for variant, io in (("global", "float32"), ("global", "float16"), ("conv_relu_pool", "float32")):
        if variant == "conv_relu_pool" and problem.C > 64:
            continue  # its template's limit; the pooled path is the same on a smaller layer
        base = VARIANTS[variant].render(problem)
        ref, scale = reference_and_scale(problem, x, w, base.output)
        for precision, tolerance in TOLERANCE.items():
            kernel = dataclasses.replace(base, precision=precision, io=io)
            job = Job.make(variant, {}, problem, "gpu")
            rng = np.random.default_rng(1)
            for kind in ("right", "zeroed element", "zeroed row", "NaN", "off-by-one shift"):
                y = ref.astype(io)
                if kind != "right":
                    _inject(kind, y, ref, scale, tolerance, rng)
                verdict = gpu._check(kernel, problem, device, drv.to_device(y), job)
                host = judge(y.astype(np.float64), ref, scale, precision, tolerance=tolerance)
                assert verdict.passed == (kind == "right" and (io == "float32" or precision != "float32")), \
                    (kind, precision, io, verdict.reason)
                assert (verdict.passed, verdict.bad, verdict.unwritten, verdict.checked) == \
                    (host.passed, host.bad, host.unwritten, host.checked), (kind, precision, io)
                caught += not verdict.passed and kind != "right"
                same = ("rel_error", "max_abs_error", "max_rel_error", "max_scaled_error", "worst_ref", "worst_bound")
                if verdict.worst != host.worst:  # a tie but for the two references' rounding (sums ordered apart)
                    ratio = np.abs(y.astype(np.float64) - ref) / (tolerance.atol * scale + tolerance.rtol * np.abs(ref))
                    assert ratio[verdict.worst] == pytest.approx(ratio[host.worst], rel=1e-9), (kind, precision, io)
                    same = same[:4]
                for name in same:  # max_rel_error: err / |ref| where |ref| is tiny, the two references' rounding shows
                    rel = 1e-3 if name == "max_rel_error" else 1e-6
                    assert getattr(verdict, name) == pytest.approx(getattr(host, name), rel=rel, nan_ok=True), name
    print(f"{problem.name}: {caught} injected faults caught over {ref.size} outputs, every verdict the host's")


def _suite_transform_cases():
    from simflow.kernels.problems import suite

    for problem in [*suite("resnet50"), *suite("vgg16")]:
        for variant, params in (("winograd", {}), ("fft", {})):  # at the suite's batch
            yield problem, variant, params
        for variant, params in (("winograd", {"m": 4}), ("winograd", {"precision": "fp16"}),
                                ("fft", {"precision": "fp16"}), ("fft", {"tile": 16})):  # the geometry, batch 2
            yield problem.with_batch(2), variant, params


SUITE_TRANSFORMS = list(_suite_transform_cases())


@pytest.mark.parametrize("problem,variant,params", SUITE_TRANSFORMS,
                         ids=[f"{p.name}-B{p.B}-{v}-{'-'.join(f'{k}={x}' for k, x in c.items()) or 'default'}"
                              for p, v, c in SUITE_TRANSFORMS])
def test_transform_variants_on_every_suite_layer_they_accept(gpu, problem, variant, params):
    """winograd and fft on every ResNet-50 and VGG-16 layer (refused by name where K != 3 or a stride)."""
    try:
        kernel = VARIANTS[variant].render(problem, params)
    except LimitError as exc:
        assert problem.stride != 1 or (variant == "winograd" and problem.K not in (3, 5)) or "fft tile" in str(exc)
        pytest.skip(f"refused, as it should be: {exc}")
    result = run(gpu, kernel, problem.B, seed=11, warmup=1, repeats=2)
    assert result.status == "passed", result.reason
    assert result.environment["check"] == "full" and result.metrics["bad_elements"] == 0
    print(f"margin {variant} {kernel.precision} {problem.name}: max |y-ref|/S = "
          f"{result.metrics['max_scaled_error']:.3g} (bound {kernel.check_tolerance.atol:.3g})")


# Winograd F(2x2,5x5): odd sizes (tiles cut at both edges, no padding or some) and the 5x5 layer of AlexNet
WINOGRAD_5X5 = [Problem(B=3, C=5, M=7, H=19, W=23, K=5, pad=2, name="odd-5x5"),
                Problem(B=2, C=3, M=8, H=17, W=18, K=5, name="first-5x5-nopad"),
                Problem(B=4, C=96, M=256, H=27, W=27, K=5, pad=2, name="alexnet-conv2")]


@pytest.mark.parametrize("problem", WINOGRAD_5X5, ids=[p.name for p in WINOGRAD_5X5])
@pytest.mark.parametrize("precision", ["fp32", "fp16"])
@pytest.mark.parametrize("m", [2, 4])
def test_winograd_5x5_passes_the_full_check(gpu, problem, precision, m):
    kernel = VARIANTS["winograd"].render(problem, {"precision": precision, "m": m})
    result = run(gpu, kernel, problem.B, seed=5, warmup=1, repeats=2)
    assert result.status == "passed", result.reason
    assert result.environment["check"] == "full" and result.metrics["bad_elements"] == 0
    print(f"margin winograd F({m}x{m},5x5) {precision} {problem.name}: max |y-ref|/S = "
          f"{result.metrics['max_scaled_error']:.3g} (bound {kernel.check_tolerance.atol:.3g})")


# The GEMM's tiles and k steps where nothing divides: C past a k step, M past 4 and a tile, 45 and 9 columns
WINOGRAD_GEMM = [Problem(B=3, C=13, M=130, H=9, W=17, K=3, pad=1, name="odd-3x3-130"),
                 Problem(B=1, C=21, M=6, H=11, W=10, K=5, pad=2, name="odd-5x5-6")]


@pytest.mark.parametrize("problem", WINOGRAD_GEMM, ids=[p.name for p in WINOGRAD_GEMM])
@pytest.mark.parametrize("tile,bk", [(64, 8), (64, 16), (128, 8), (128, 16)])
@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_winograd_gemm_tiles_pass_the_full_check(gpu, problem, tile, bk, precision):
    kernel = VARIANTS["winograd"].render(problem, {"precision": precision, "m": 4, "tile": tile, "bk": bk})
    result = run(gpu, kernel, problem.B, seed=7, warmup=1, repeats=2)
    assert result.status == "passed", result.reason
    assert result.environment["check"] == "full" and result.metrics["bad_elements"] == 0


BF16_LAYERS = {"3x3": Problem(B=3, C=96, M=72, H=14, W=13, K=3, pad=1, name="3x3-c96-m72"),
               "1x1": Problem(B=3, C=128, M=72, H=14, W=14, K=1, pad=0, name="1x1-c128-m72"),
               "1x1-s2": Problem(B=2, C=64, M=40, H=14, W=13, K=1, pad=0, stride=2, name="1x1-stride2"),
               "3x3-m64": Problem(B=3, C=96, M=64, H=14, W=13, K=3, pad=1, name="3x3-c96-m64")}  # WMMA: M in 16s
BF16_CASES = [("mma_nhwc", {}, "3x3"), ("mma_nhwc", {"split": 2}, "3x3"),
              ("mma_nhwc", {"tile_n": 64, "stages": 4}, "1x1-s2"),
              ("mma_nchw", {}, "3x3"), ("mma_nchw", {"tile_m": 64, "split": 2}, "1x1"),
              ("wgmma_nhwc", {}, "3x3"), ("wgmma_nhwc", {"stream_k": True}, "3x3"),
              ("wgmma_nhwc", {"tile_m": 64, "tile_n": 128, "persistent": True}, "1x1"),
              ("wgmma_nchw", {}, "1x1"), ("wgmma_nchw", {"tile_n": 64, "persistent": True}, "1x1"),
              ("wgmma_nchw", {"gather": True, "tile_n": 64}, "1x1-s2"), ("wmma", {}, "3x3-m64"),
              ("wmma_nhwc", {}, "3x3-m64"), ("wmma_nhwc", {"tile_n": 256, "stages": 4}, "3x3-m64")]


@pytest.mark.parametrize("variant,params,layer", BF16_CASES,
                         ids=[f"{v}-{'-'.join(f'{k}={x}' for k, x in p.items()) or 'default'}-{lay}"
                              for v, p, lay in BF16_CASES])
def test_bf16_matches_reference_and_rounds_coarser_than_fp16(gpu, variant, params, layer):
    """bf16 inputs (8 bits of mantissa against fp16's 11): every element within the bf16 tolerance, and the
    error well above the same kernel's fp16 error (so the inputs really were bf16, not half or TF32)."""
    problem = BF16_LAYERS[layer]
    errors = {}
    for precision in ("bf16", "fp16"):
        kernel = VARIANTS[variant].render(problem, {**params, "precision": precision})
        result = run(gpu, kernel, problem.B, seed=11, warmup=1, repeats=2)
        assert result.status == "passed", result.reason
        assert result.metrics["bad_elements"] == 0 and result.environment["check"] == "full"
        errors[precision] = result.metrics["max_scaled_error"]
    assert kernel.precision == "float16" and VARIANTS[variant].render(problem, {**params, "precision": "bf16"}
                                                                      ).precision == "bfloat16"
    print(f"bf16 {variant} {params} {layer}: max |y-ref|/S bf16 {errors['bf16']:.3g}, fp16 {errors['fp16']:.3g}")
    assert errors["bf16"] > 2 * errors["fp16"]  # u is 8x fp16's


BF16_IO_CASES = [("mma_nhwc", {}, "3x3"), ("mma_nhwc", {"split": 2}, "3x3"), ("mma_nchw", {}, "1x1"),
                 ("mma_nchw", {"split": 2, "tile_m": 64}, "1x1"), ("wgmma_nhwc", {}, "3x3"),
                 ("wgmma_nhwc", {"stream_k": True}, "3x3"), ("wgmma_nhwc", {"tile_m": 64, "persistent": True}, "1x1"),
                 ("wgmma_nchw", {}, "1x1"), ("wgmma_nchw", {"tile_n": 64, "persistent": True}, "1x1"),
                 ("wgmma_nchw", {"gather": True, "tile_n": 64}, "1x1-s2")]


@pytest.mark.parametrize("variant,params,layer", BF16_IO_CASES,
                         ids=[f"{v}-{'-'.join(f'{k}={x}' for k, x in p.items()) or 'default'}-{lay}"
                              for v, p, lay in BF16_IO_CASES])
@pytest.mark.parametrize("sample", [False, True], ids=["full", "sample"])
def test_bf16_tensors_match_reference(gpu, variant, params, layer, sample):
    """io=bfloat16: x, w and y bf16 in device memory (what a bf16 network passes between layers), judged on the
    GPU (bf16 y read by the check kernel) and on the host (a sample, the bf16 patterns widened)."""
    problem = BF16_LAYERS[layer]
    kernel = VARIANTS[variant].render(problem, {**params, "precision": "bf16", "io": "bfloat16"})
    result = run(gpu, kernel, problem.B, seed=12, warmup=1, repeats=2, sample_check=sample)
    assert result.status == "passed", result.reason
    assert result.metrics["bad_elements"] == 0
    assert result.environment["check"] == ("sample" if sample else "full")
    assert result.metrics["gbps"] > 0 and kernel.io == "bfloat16"
