python3 -m pip install -q --no-index --no-deps --no-compile --target .pysite .whl/*.whl && export PYTHONPATH=$PWD/.pysite:$PWD PYTHONUNBUFFERED=1 SIMFLOW_CACHE=/tmp/simflow-cache
S="--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats"  # ncu's defaults: clocks locked to base, caches flushed before each profiled launch
cat > /tmp/cudnn.py <<'PY'
import torch
torch.backends.cudnn.benchmark = True
x = torch.randn(32, 200, 28, 28, device="cuda", dtype=torch.float16)
w = torch.randn(104, 200, 1, 1, device="cuda", dtype=torch.float16)
for _ in range(20):
    y = torch.nn.functional.conv2d(x, w)
torch.cuda.synchronize()
torch.cuda.nvtx.range_push("timed")
y = torch.nn.functional.conv2d(x, w)
torch.cuda.synchronize()
PY
ncu $S --launch-skip 0 --nvtx --nvtx-include "timed/" python3 /tmp/cudnn.py > $OUT/cudnn.txt 2>&1
ncu $S --kernel-name regex:wgmma --launch-skip 2 --launch-count 1 python3 -m simflow run wgmma_nchw --shape 32,200,104,28,28,1,0 -P io=float16 -P tile_n=192 --warmup 2 --repeats 3 --no-store > $OUT/simflow.txt 2>&1
python3 -m simflow run wgmma_nchw --shape 32,200,104,28,28,1,0 -P io=float16 -P tile_n=192 --repeats 50 --no-store 2>&1 | tail -5
for f in cudnn simflow; do echo "== $f"; grep -E "^  [a-z_0-9]+.*\(|Duration|DRAM Throughput|L2 Cache Throughput|Memory Throughput|Compute \(SM\)|Registers Per|Shared Memory Config|Dynamic Shared|Grid Size|Block Size|Achieved Occupancy|Issued Warp|No Eligible|Warp Cycles Per Issued|Mem Busy|Max Bandwidth|L1/TEX Hit|L2 Hit|Waves Per SM|Elapsed Cycles|Theoretical Occ" $OUT/$f.txt | head -60; done
