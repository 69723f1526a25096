"""fma_to_load_kernel.cu in GPGPU-Sim: one block of 1,024 threads on one SM, 2 then 10 passes (as calibrate --check
runs its streams); loads an SM a cycle from the extra passes' cycles. Run from the repository root with the
simulator and CUDA 11.x found (simflow doctor):
    python fma_to_load_sim.py CONFIG NF WAYS[,WAYS...] [OPTION=VALUE ...]
OPTION=VALUE: simulator options set over CONFIG's (an experiment; the log's folder is printed)."""

import subprocess
import sys
import tempfile
from pathlib import Path

from simflow.kernels.toolkits import cuda_install_path
from simflow.sim.config import SimConfig, load_config, write_run_config
from simflow.sim.log import parse_text
from simflow.sim.simulator import environment, find_simulator
from simflow.sim.standalone import build_program, cuda11_toolkit

MAIN = r"""
#include <cstdio>
int main() {
  float *sink; cudaMalloc(&sink, 4);
  int iters[2] = {2, 10}, ways[] = {WAYS};
  for (int w : ways) for (int l = 0; l < 2; l++) { cal_mix<<<1, 1024>>>(iters[l], w, sink); cudaDeviceSynchronize(); }
  printf("done\n"); return 0; }
"""

nf, ways = int(sys.argv[2]), [int(x) for x in sys.argv[3].split(",")]
extra = dict(a.split("=", 1) for a in sys.argv[4:])
source = f"#define NF {nf}\n" + (Path(__file__).parent / "fma_to_load_kernel.cu").read_text() + \
    MAIN.replace("WAYS", ",".join(map(str, ways)))
toolkit = cuda11_toolkit()
binary = build_program(source, f"fma-to-load-{nf}", toolkit)
base = load_config(sys.argv[1])
config = SimConfig(base.name, base.base, base.description,
                   {**base.options, "gpgpu_runtime_stat": "100000:0", **extra}, base.path)
folder, sim = Path(tempfile.mkdtemp(prefix="fma-to-load-")), find_simulator()
write_run_config(config, folder, sim.root)
proc = subprocess.run([str(binary)], cwd=folder, env=environment(sim, cuda_install_path(toolkit)), capture_output=True)
text = (proc.stdout + proc.stderr).decode(errors="replace")
(folder / "sim.log").write_text(text)
runs = [k for k in parse_text(text).kernels if k.kernel == "cal_mix"]
loads = 1024 * 32 * 8  # a thread's 32 loads a pass, 8 passes more
for i, w in enumerate(ways):
    cycles = runs[2 * i + 1].metrics["gpu_sim_cycle"] - runs[2 * i].metrics["gpu_sim_cycle"]
    print(f"NF {nf} ways {w} {extra or ''}: {loads / cycles:.2f} loads an SM a cycle ({cycles:.0f} cycles)")
print(folder)
