"""Every variant x parameter combination compiles with the machine's real nvcc (sm_90 cubin)."""

import itertools
import re

import pytest
from cases import ALL, PROBLEM, problem_for
from hardware import MODERN_NVCC

from simflow.errors import ToolError
from simflow.kernels.problems import Problem, get_problem
from simflow.kernels.toolkits import compile_kernel, parse_ptxas_log
from simflow.kernels.variants import render

pytestmark = [pytest.mark.nvcc]


@pytest.mark.parametrize("variant,params", ALL, ids=[f"{v}-" + "-".join(map(str, p.values())) for v, p in ALL])
def test_compiles_cleanly(variant, params):
    kernel = render(variant, problem_for(variant), params)
    arch = kernel.build_arch("sm_90")  # sm_90a for wgmma
    compiled = compile_kernel(kernel.source, arch, kernel.fingerprint((arch,)), toolkit=MODERN_NVCC)
    assert compiled.path.stat().st_size > 0
    assert "warning" not in compiled.log.lower(), compiled.log
    # ptxas's wgmma notes (C75xx) say it serialised the multiplies or waited where the template did not: session 58's
    # two-buffer A operand in wgmma_nchw compiled with "(C7519) warpgroup.arrive is injected" and ran 1.04-1.35x slower
    assert not re.search(r"\(C75\d\d\)", compiled.log), compiled.log
    for name in kernel.kernel_names:
        usage = compiled.resources[name]
        assert 0 < usage["registers"] <= 255
        assert usage["spill_store_bytes"] == 0


# The pipelined GEMMs on the suite's kinds of layer (the test PROBLEM, C = 3, takes mma_nchw's gather path only):
# a 3x3, a strided 1x1 projection and a first layer, in their largest settings, without a spill.
SUITE_LAYERS = ["resnet50-3x3-64-64-56", "resnet50-1x1-512-1024-28-s2", "resnet50-conv1"]
PIPELINED = [("implicit_gemm_async", {"bk": 16, "stages": 4, "split": 4}),
             *((name, {"precision": precision, "bk": bk, "stages": 4})
               for name, bk in (("mma_nhwc", 64), ("mma_nchw", 32)) for precision in ("fp16", "tf32", "bf16")),
             ("mma_nhwc", {"precision": "fp16", "split": 4}),  # split-K's registers spilled at 2 blocks an SM
             ("wgmma_nhwc", {"io": "float16"}), ("wgmma_nhwc", {"tile_n": 128, "stages": 6}),
             ("wgmma_nhwc", {"precision": "bf16", "tile_n": 128, "stages": 6})]


@pytest.mark.parametrize("layer", SUITE_LAYERS)
@pytest.mark.parametrize("variant,params", PIPELINED,
                         ids=[f"{v}-" + "-".join(map(str, p.values())) for v, p in PIPELINED])
def test_pipelined_gemms_do_not_spill_on_suite_layers(variant, params, layer):
    kernel = render(variant, get_problem(layer), params)
    arch = kernel.build_arch("sm_90")
    compiled = compile_kernel(kernel.source, arch, kernel.fingerprint((arch,)), toolkit=MODERN_NVCC)
    for name in kernel.kernel_names:
        assert compiled.resources[name]["spill_store_bytes"] == 0, (name, compiled.log)


# wgmma_halo's largest register and shared-memory settings on the layers it wins: 128 float sums a thread and the
# fragments of three taps, without a spill.
HALO = [{"tile_m": 64, "tile_n": 512}, {"tile_m": 128, "tile_n": 256},
        {"tile_m": 256, "tile_n": 128, "stages": 2}]


@pytest.mark.parametrize("layer", ["vgg16-conv1_2", "resnet50-3x3-64-64-56", "vgg16-conv3_2"])
@pytest.mark.parametrize("params", HALO, ids=["-".join(f"{k}={v}" for k, v in p.items()) for p in HALO])
def test_wgmma_halo_does_not_spill_on_suite_layers(params, layer):
    kernel = render("wgmma_halo", get_problem(layer), params)
    compiled = compile_kernel(kernel.source, "sm_90a", kernel.fingerprint(("sm_90a",)), toolkit=MODERN_NVCC)
    for name in kernel.kernel_names:
        assert compiled.resources[name]["spill_store_bytes"] == 0, (name, compiled.log)


GATHER = [{"io": "float16", "gather": True}, {"io": "float16", "gather": True, "tile_m": 256, "stages": 4},
          {"io": "float16", "gather": True, "tile_n": 64, "stages": 6, "persistent": True},
          {"precision": "tf32", "gather": True, "tile_m": 256, "tile_n": 64},
          {"gather": True, "stages": 3, "persistent": True},
          {"precision": "tf32", "gather": True, "split": 2}, {"precision": "tf32", "split": 4, "tile_m": 256},
          {"split": 2}]


@pytest.mark.parametrize("layer", ["resnet50-1x1-512-1024-28-s2", "resnet50-1x1-2048-512-7"])
@pytest.mark.parametrize("params", GATHER, ids=["-".join(f"{k}={v}" for k, v in p.items()) for p in GATHER])
def test_wgmma_nchw_gather_and_split_compile_without_spills(params, layer):
    """gather (the strided and 7x7 1x1 layers, where test_compiles_cleanly's stride-1 layer refuses it) and split-K
    (its zeroing launch, atomic adds): every launch, no warning, no spill."""
    kernel = render("wgmma_nchw", get_problem(layer), params)
    arch = kernel.build_arch("sm_90")
    compiled = compile_kernel(kernel.source, arch, kernel.fingerprint((arch,)), toolkit=MODERN_NVCC)
    assert "warning" not in compiled.log.lower(), compiled.log
    assert ("conv2d_wgmma_nchw_x" in kernel.kernel_names) == params.get("gather", False)
    assert ("conv2d_wgmma_nchw_zero" in kernel.kernel_names) == (params.get("split", 1) > 1)
    for name in kernel.kernel_names:
        assert compiled.resources[name]["spill_store_bytes"] == 0, (name, compiled.log)


HALF_IO = [*(("mma_nchw", {"precision": "fp16", "io": "float16", "tile_m": m, "tile_n": n, "bk": bk, "stages": stages})
             for m, n, bk, stages in itertools.product((128, 64), (128, 64), (32, 16), (3, 2, 4))),
           *(("mma_nhwc", {"precision": "fp16", "io": "float16", "tile_n": n, "bk": bk, "stages": stages})
             for n, bk, stages in itertools.product((128, 256), (32, 64), (3, 2, 4))),
           *(("wgmma_nhwc", {"io": "float16", "tile_n": n, "stages": stages}) for n, stages in ((256, 4), (128, 3))),
           *((v, {"precision": "bf16", "io": "bfloat16", **p}) for v, p in (  # bf16 tensors: the same paths
               ("mma_nchw", {}), ("mma_nchw", {"split": 2}), ("mma_nhwc", {}), ("mma_nhwc", {"split": 2}),
               ("wgmma_nhwc", {}), ("wgmma_nhwc", {"stream_k": True}),
               ("wgmma_nhwc", {"tile_n": 128, "persistent": True}), ("wgmma_nchw", {}),
               ("wgmma_nchw", {"tile_n": 64})))]


@pytest.mark.parametrize("variant,params", HALF_IO, ids=[f"{v}-" + "-".join(map(str, p.values())) for v, p in HALF_IO])
def test_half_io_compiles_without_spills(variant, params):
    """io=float16 on layers other than test_compiles_cleanly's 5x5 problem (mma_nchw takes 1x1 stride-1 layers only):
    every setting here."""
    one = variant in ("mma_nchw", "wgmma_nchw")  # x read in place: 1x1 layers
    layer = Problem(B=2, C=40, M=24, H=6, W=10, K=1 if one else 3, pad=0 if one else 1, name="ragged")
    kernel = render(variant, layer, params)
    arch = kernel.build_arch("sm_90")
    compiled = compile_kernel(kernel.source, arch, kernel.fingerprint((arch,)), toolkit=MODERN_NVCC)
    assert "warning" not in compiled.log.lower(), compiled.log
    for name in kernel.kernel_names:
        assert compiled.resources[name]["spill_store_bytes"] == 0, (name, compiled.log)


def _entry(ptx: str, name: str) -> str:
    """The PTX body of one kernel."""
    return ptx.split(f".entry {name}(")[1].split(".entry ")[0]


# 8- and 16-byte stores of y written as float2/float4 through reinterpret_cast came out of nvcc (11.8 and 13)
# as 4-byte ones in these kernels: half of each 32-byte sector sent to L2 unused (Nsight Compute, H200).
# Half y (io=float16) goes out through shared memory in 16-byte rows: 4-byte half2 stores also filled half a sector.
VECTOR_STORES = [("implicit_gemm_async", {}, "v4.f32"), ("regtile", {"outputs": 4, "rows": 8}, "v4.f32"),
                 ("mma_nchw", {"precision": "fp16"}, "v2.f32"), ("mma_nhwc", {"precision": "tf32"}, "v2.f32"),
                 ("mma_nchw", {"precision": "fp16", "io": "float16"}, "v4.u32"), ("wgmma_nhwc", {}, "v2.f32"),
                 ("wgmma_nhwc", {"io": "float16"}, "v4.u32"), ("wgmma_nchw", {}, "v4.f32"),
                 ("wgmma_nchw", {"io": "float16"}, "v4.u32"),
                 ("wgmma_nhwc", {"precision": "bf16", "io": "bfloat16"}, "v4.u32"),
                 ("wgmma_nchw", {"precision": "bf16", "io": "bfloat16"}, "v4.u32")]
# wgmma_nchw: rows of 4 float, 8 half (or bf16) pixels (HW % 8 = 0)


@pytest.mark.parametrize("variant,params,vector", VECTOR_STORES,
                         ids=[f"{v}-{'-'.join(map(str, p.values()))}" for v, p, _ in VECTOR_STORES])
def test_output_stores_stay_vector(variant, params, vector):
    problem = get_problem("resnet50-1x1-64-256-56" if variant != "regtile" else "fmnist-conv1").with_batch(2)
    kernel = render(variant, problem, params)
    compiled = compile_kernel(kernel.source, kernel.build_arch("sm_90"), kernel.fingerprint(("ptx",)), output="ptx")
    body = _entry(compiled.path.read_text(), f"conv2d_{variant}")
    assert f"st.global.wb.{vector}" in body
    if variant != "regtile":  # regtile's tail columns (past a multiple of 4) are stored one by one
        assert not any(f"st.global.{kind} " in body for kind in ("f32", "b32", "u32", "b16", "u16"))


@pytest.mark.parametrize("params", [{"channels": 8, "outputs": 2, "rows": 16, "weights": "shared"},
                                    {"channels": 12, "outputs": 4}, {"channels": 4, "outputs": 8, "images": 2}],
                         ids=["shared-8", "constant-12", "constant-4"])
def test_regtile_channel_groups_compile_without_spills(params):
    """The test problem's M = 5 takes no channel group, so the all-combinations test never compiles one:
    k7net-conv2 (M = 24) in groups of 4, 8 and 12, weights in shared and constant memory."""
    kernel = render("regtile", get_problem("k7net-conv2"), params)
    compiled = compile_kernel(kernel.source, "sm_90", kernel.fingerprint(("sm_90",)), toolkit=MODERN_NVCC)
    assert "warning" not in compiled.log.lower(), compiled.log
    usage = compiled.resources["conv2d_regtile"]
    assert 0 < usage["registers"] <= 255 and usage["spill_store_bytes"] == 0


@pytest.mark.parametrize("preset", ["fmnist-conv1", "fmnist-conv2", "batch3x3", "toycnn", "k7net-conv2"])
def test_presets_compile_to_ptx(preset):
    kernel = render("shared_weights", get_problem(preset), {"unroll": "both"})
    compiled = compile_kernel(kernel.source, "sm_90", kernel.fingerprint(("ptx",)), output="ptx")
    assert ".entry conv2d_shared_weights" in compiled.path.read_text()


def test_compile_is_cached():
    kernel = render("global", PROBLEM)
    first = compile_kernel(kernel.source, "sm_90", kernel.fingerprint(("cache-test",)))
    stamp = first.path.stat().st_mtime_ns
    second = compile_kernel(kernel.source, "sm_90", kernel.fingerprint(("cache-test",)))
    assert second.path == first.path and second.path.stat().st_mtime_ns == stamp
    assert second.resources == first.resources


def test_compile_error_keeps_command_and_output():
    with pytest.raises(ToolError) as err:
        compile_kernel("extern \"C\" __global__ void broken() { undeclared_thing = 1; }", "sm_90", "broken0001")
    assert "nvcc" in err.value.command[0] and "-arch=sm_90" in err.value.command
    assert "undeclared_thing" in err.value.output


def test_ptxas_log_parsing():
    log = """ptxas info    : 0 bytes gmem, 6272 bytes cmem[3]
ptxas info    : Compiling entry function 'conv2d_constant' for 'sm_70'
ptxas info    : Function properties for conv2d_constant
    0 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 40 registers, 2048 bytes smem, 380 bytes cmem[0]
"""
    usage = parse_ptxas_log(log)["conv2d_constant"]
    assert usage == {"stack_bytes": 0, "spill_store_bytes": 8, "spill_load_bytes": 4, "registers": 40,
                     "static_smem_bytes": 2048, "cmem_bytes": 380}


STRIDED = get_problem(shape="2,32,32,29,27,3,1,2")


@pytest.mark.parametrize("variant", ["global", "constant", "shared", "shared_weights", "shared_constant",
                                     "implicit_gemm", "conv_relu_pool", "im2col_gemm", "wmma", "wmma_nhwc"])
def test_strided_layers_compile(variant):
    kernel = render(variant, STRIDED)
    assert "STRIDE = 2" in kernel.source
    compiled = compile_kernel(kernel.source, "sm_90", kernel.fingerprint(("sm_90",)), toolkit=MODERN_NVCC)
    assert "warning" not in compiled.log.lower(), compiled.log


@pytest.mark.parametrize("params", [{}, {"precision": "tf32"}, {"bk": 64}], ids=["fp16", "tf32", "bk64"])
def test_wmma_nhwc_with_padded_channels_compiles(params):
    kernel = render("wmma_nhwc", get_problem("resnet50-conv1").with_batch(2), params)  # C = 3
    compiled = compile_kernel(kernel.source, "sm_90", kernel.fingerprint(("sm_90",)), toolkit=MODERN_NVCC)
    assert "warning" not in compiled.log.lower(), compiled.log
    assert all(compiled.resources[name]["spill_store_bytes"] == 0 for name in kernel.kernel_names)


def test_the_timing_hold_kernel_compiles():
    """GpuBackend queues each timed repeat behind it (so host enqueue time is not timed): it must build."""
    from simflow.backends.gpu import HOLD_SOURCE

    compiled = compile_kernel(HOLD_SOURCE, "sm_90", "hold-kernel-test", toolkit=MODERN_NVCC)
    assert compiled.resources["simflow_hold"]["registers"] > 0


CHECKED = [("conv", "float32"), ("conv", "float16"), ("conv", "bfloat16"), ("conv_relu_pool", "float32")]


@pytest.mark.parametrize("output,io", CHECKED, ids=[f"{o}-{io}" for o, io in CHECKED])
@pytest.mark.parametrize("problem", ["batch3x3", "resnet50-1x1-512-1024-28-s2"])
def test_the_gpu_check_compiles_for_each_output(output, io, problem):
    """The kernel that judges a GPU run's output (built by PyCUDA at run time, where CI has no GPU to run it)."""
    import hashlib

    from simflow.backends.gpu import check_source

    source = check_source(get_problem(problem), output, io)
    compiled = compile_kernel(source, "sm_90", hashlib.sha256(source.encode()).hexdigest()[:16], toolkit=MODERN_NVCC)
    assert "warning" not in compiled.log.lower(), compiled.log
    assert compiled.resources["simflow_check"]["spill_store_bytes"] == 0
