python3 -m pip install -q --no-index --no-deps --no-compile --target .pysite .whl/*.whl && export PYTHONPATH=$PWD/.pysite:$PWD PYTHONUNBUFFERED=1 SIMFLOW_CACHE=/tmp/simflow-cache
cat > /tmp/cudnn.py <<'PY'
import torch
torch.backends.cudnn.benchmark = True
x = torch.randn(32, 200, 28, 28, device="cuda", dtype=torch.float16)
w = torch.randn(104, 200, 1, 1, device="cuda", dtype=torch.float16)
for _ in range(20):
    y = torch.nn.functional.conv2d(x, w)
torch.cuda.synchronize()
torch.cuda.nvtx.range_push("timed")
for _ in range(5):
    y = torch.nn.functional.conv2d(x, w)
    torch.cuda.synchronize()
PY
M="gpu__time_duration.sum,sm__cycles_elapsed.max,smsp__cycles_active.avg,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,sm__warps_active.avg.pct_of_peak_sustained_active"
for cc in none all; do
echo "== cache-control $cc, clock-control none"
ncu --clock-control none --cache-control $cc --metrics $M --nvtx --nvtx-include "timed/" python3 /tmp/cudnn.py 2>&1 | grep -E "^  [a-zA-Z_]|gpu__time|sm__cycles_el|dram__bytes|lts__t_bytes" | head -40
ncu --clock-control none --cache-control $cc --metrics $M --kernel-name regex:wgmma --launch-skip 2 --launch-count 5 python3 -m simflow run wgmma_nchw --shape 32,200,104,28,28,1,0 -P io=float16 -P tile_n=192 --warmup 2 --repeats 5 --no-store 2>&1 | grep -E "^  [a-zA-Z_]|gpu__time|sm__cycles_el|dram__bytes|lts__t_bytes" | head -40
done > $OUT/ncu-clocks.txt
python3 - <<'PY'
import os, re
t = open(os.environ["OUT"] + "/ncu-clocks.txt").read()
for block in t.split("== ")[1:]:
    head = block.splitlines()[0]
    names = re.findall(r"^  (\S+) \(", block, re.M)
    durs = re.findall(r"gpu__time_duration.sum\s+\S+\s+([\d.,]+)", block)
    print(head)
    for n, d in zip(names, durs): print("  ", n[:45], d)
PY
