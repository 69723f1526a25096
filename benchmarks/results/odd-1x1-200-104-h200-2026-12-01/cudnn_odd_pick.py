"""Which cuDNN kernel the suite's timing of 1x1 200->104 at 28 (batch 32, fp16) runs: native.time_cudnn as the
suite calls it, under torch.profiler, in a fresh process (run twice); kernel names, launches, mean CUDA time."""
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
sys.path.insert(0, str(Path.cwd() / "benchmarks"))
import torch  # noqa: E402
from native import time_cudnn  # noqa: E402

from simflow.kernels.problems import Problem  # noqa: E402

problem = Problem(B=32, C=200, M=104, H=28, W=28, K=1, name="1x1-200-104-28")
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
    ms = time_cudnn(problem, 20, "float16")
kernels = defaultdict(list)
for e in prof.events():
    if e.device_type == torch.autograd.DeviceType.CUDA:
        kernels[e.name].append(e.device_time)
print(f"time_cudnn (event pairs, the suite's figure) {ms * 1e3:.2f} us")
for name, t in sorted(kernels.items(), key=lambda kv: -len(kv[1])):
    print(f"{len(t):4d} x {sum(t) / len(t):8.2f} us  {name[:110]}")
