"""cuDNN's benchmark-mode pick against its heuristics' pick, timed as benchmarks/native.py times cuDNN."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
sys.path.insert(0, str(Path.cwd() / "benchmarks"))
import torch  # noqa: E402
from native import _time_cudnn_choice, time_cudnn  # noqa: E402

from simflow.kernels.problems import get_problem  # noqa: E402

torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = True
print("layer | precision | benchmark mode ms | heuristics ms | time_cudnn ms")
for name in sys.argv[1].split(","):
    problem = get_problem(name)
    for precision in ("tf32", "float16"):
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        b = _time_cudnn_choice(torch, problem, 20, precision, True)
        h = _time_cudnn_choice(torch, problem, 20, precision, False)
        print(f"{name} | {precision} | {b:.4f} | {h:.4f} | {time_cudnn(problem, 20, precision):.4f}", flush=True)
