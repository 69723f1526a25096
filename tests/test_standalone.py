"""The standalone simulator program: same kernel text, same launch, builds with CUDA 13 (syntax) and 11.x."""

import dataclasses
import subprocess

import pytest
from hardware import CUDA11, MODERN_NVCC

from simflow.errors import UserError
from simflow.kernels.problems import get_problem
from simflow.kernels.toolkits import Toolkit
from simflow.kernels.variant_types import WARM_KERNEL, written_before
from simflow.kernels.variants import VARIANTS, render
from simflow.sim.standalone import build_program, cuda11_toolkit, render_program

PROBLEM = get_problem("batch3x3")
WMMA_PROBLEM = get_problem(None, shape="2,1,16,16,16,3,1")  # batch3x3 with 16 output channels
NHWC_PROBLEM = get_problem(None, shape="2,32,16,16,16,3,1")  # ... and 32 input channels
POINTWISE_PROBLEM = get_problem(None, shape="2,32,16,16,16,1,0")  # a 1x1 layer (wgmma_nchw)


def problem_for(variant):
    return {"wmma": WMMA_PROBLEM, "wmma_nhwc": NHWC_PROBLEM, "wgmma_nchw": POINTWISE_PROBLEM}.get(variant, PROBLEM)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_program_embeds_the_rendered_kernel_verbatim(variant):
    problem = problem_for(variant)
    kernel = render(variant, problem, {"unroll": "inner"} if variant in ("global", "constant", "shared",
                                                                         "shared_weights", "shared_constant") else {})
    program = render_program(kernel, problem.B)
    assert kernel.source.rstrip("\n") in program.source
    for launch in kernel.launches(problem.B):
        assert f"grid({', '.join(map(str, launch.grid))})" in program.source
        assert f"{launch.kernel}<<<grid, block, {launch.dynamic_smem}>>>" in program.source
    for name, count in kernel.workspace(problem.B).items():
        assert f"cudaMalloc(&d_{name}, (size_t){count} * sizeof(float))" in program.source
    if kernel.constant_symbols:
        assert "cudaMemcpyToSymbol(w_const" in program.source
    assert program.fingerprint == render_program(kernel, problem.B).fingerprint
    assert program.fingerprint != render_program(kernel, problem.B + 1).fingerprint


LAUNCH_PARTS = [("im2col_gemm", "conv2d_im2col_gemm_permute", ["gemm"]), ("fft", "conv2d_fft_cgemm", ["wf", "xf"]),
                ("im2col_gemm", "conv2d_im2col_gemm_im2col", [])]


@pytest.mark.parametrize("variant,launch,warmed", LAUNCH_PARTS)
def test_a_launch_made_alone_first_warms_the_l2_with_what_the_launches_before_wrote(variant, launch, warmed):
    """Sampled simulation's launch parts (Kernel.only): a warm launch a buffer the launches before it wrote (in the
    order they last took them: fft's cgemm reads wf, then xf), writing as many of its last floats as the L2 of the
    run's config holds (SIMFLOW_L2_BYTES); none before a first launch."""
    kernel = dataclasses.replace(render(variant, PROBLEM), only=launch)
    program = render_program(kernel, PROBLEM.B)
    assert [a for x in kernel.launches(PROBLEM.B)[:-1] for a in x.args] == warmed
    assert kernel.kernel_names == [WARM_KERNEL] * len(warmed) + [launch]
    for name in warmed:
        count = kernel.workspace(PROBLEM.B)[name]
        assert f"{WARM_KERNEL}<<<grid, block>>>(d_{name}, (size_t){count}, l2_floats);" in program.source
    assert ('getenv("SIMFLOW_L2_BYTES")' in program.source) == bool(warmed)
    assert (f"__global__ void {WARM_KERNEL}(" in program.source) == bool(warmed)


@pytest.mark.nvcc
def test_a_program_that_warms_the_l2_compiles_with_cuda13(tmp_path):
    kernel = dataclasses.replace(render("fft", PROBLEM), only="conv2d_fft_cgemm")
    options = ("-O3", "-c", "-gencode=arch=compute_90,code=sm_90", "-Werror", "all-warnings")
    obj = build_program(render_program(kernel, PROBLEM.B).source, "fft", MODERN_NVCC, options, folder=tmp_path)
    assert obj.stat().st_size > 0


def test_written_before_skips_the_host_inputs_and_orders_by_the_last_writer():
    """mma_nhwc's GEMM takes xh (the x copy, first launch) and wh (the w copy, second): both, in that order; x and w
    come from the host; y counts where an earlier launch took it (split-K's zeroing)."""
    gemm = render("mma_nhwc", NHWC_PROBLEM, {"split": 2}).launches(2)
    assert [launch.kernel[len("conv2d_mma_nhwc"):] for launch in gemm] == ["_x", "_w", "_zero", ""]
    assert written_before(gemm, 3) == ["xh", "wh", "y"] and written_before(gemm, 0) == []


@pytest.mark.nvcc
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_program_compiles_with_cuda13(variant, tmp_path):
    kernel = render(variant, problem_for(variant))
    program = render_program(kernel, problem_for(variant).B)
    cc = kernel.build_arch("sm_90").removeprefix("sm_")  # 90a for wgmma: only that (-arch=sm_90a adds compute_90 PTX)
    obj = build_program(program.source, variant, MODERN_NVCC,
                        ("-O3", "-c", f"-gencode=arch=compute_{cc},code=sm_{cc}", "-Werror", "all-warnings"),
                        folder=tmp_path)
    assert obj.stat().st_size > 0


@pytest.mark.cuda11
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_program_builds_for_the_simulator(variant, tmp_path):
    problem = problem_for(variant)
    binary = build_program(render_program(render(variant, problem), problem.B).source, variant, folder=tmp_path)
    ldd = subprocess.run(["ldd", str(binary)], capture_output=True, text=True).stdout
    assert "libcudart.so.11" in ldd  # the shared runtime, so the simulator's library can stand in
    ptx = subprocess.run([str(CUDA11.bin_dir / "cuobjdump") if (CUDA11.bin_dir / "cuobjdump").exists()
                          else "cuobjdump", "-lptx", str(binary)], capture_output=True, text=True).stdout
    assert "sm_70" in ptx


def test_newer_toolkits_are_refused_for_the_simulator(monkeypatch):
    from simflow.sim import standalone

    fake = (Toolkit(nvcc=MODERN_NVCC.nvcc if MODERN_NVCC else __import__("pathlib").Path("/x/nvcc"),
                    version=(13, 0)),)
    monkeypatch.setattr(standalone, "find_toolkits", lambda: fake)
    with pytest.raises(UserError, match=r"only programs built with CUDA 11.x; found .*CUDA 13.0.*apt-get"):
        cuda11_toolkit()
