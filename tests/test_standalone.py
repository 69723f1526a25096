"""The standalone simulator program: same kernel text, same launch, builds with CUDA 13 (syntax) and 11.x."""

import subprocess

import pytest
from hardware import CUDA11, MODERN_NVCC

from simflow.errors import UserError
from simflow.kernels.problems import get_problem
from simflow.kernels.toolkits import Toolkit
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
