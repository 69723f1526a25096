"""Which kernels cuDNN (PyTorch conv2d, TF32, benchmark mode) picks on ResNet-50's 1x1 layers where its time varies
between suite runs, in fresh processes, and how long they take (torch.profiler's CUPTI kernel times)."""
import subprocess
import sys

LAYERS = {"1x1-1024-256-14": (32, 1024, 256, 14, 14, 1), "1x1-512-256-28": (32, 512, 256, 28, 28, 1),
          "1x1-256-128-56": (32, 256, 128, 56, 56, 1)}
CHILD = r'''
import sys, torch, statistics
B, C, M, H, W, S = map(int, sys.argv[1:7])
torch.backends.cudnn.allow_tf32 = True; torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.benchmark = True
xs = [torch.rand(B, C, H, W, device="cuda") for _ in range(8)]; w = torch.rand(M, C, 1, 1, device="cuda")
conv = torch.nn.functional.conv2d
with torch.no_grad():
    for i in range(5): conv(xs[i % 8], w, stride=S)
    torch.cuda.synchronize()
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(20): conv(xs[i % 8], w, stride=S)
        torch.cuda.synchronize()
    ks = {}
    for e in prof.events():
        if e.device_type.name == "CUDA":
            ks.setdefault(e.name, []).append(e.device_time if hasattr(e, "device_time") else e.cuda_time)
    for n, t in ks.items():
        print(f"  {len(t):3d} x {statistics.median(t):7.2f} us  {n[:150]}")
'''
for name, (B, C, M, H, W, S) in LAYERS.items():
    for run in range(3):
        print(f"{name} process {run}", flush=True)
        subprocess.run([sys.executable, "-c", CHILD, *map(str, (B, C, M, H, W, S))], check=False)
