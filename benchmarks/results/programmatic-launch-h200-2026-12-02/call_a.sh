set -x
python3 -m pip install -q --no-index --no-deps --no-compile --target .pysite .whl/*.whl
export PYTHONPATH=$PWD/.pysite:$PWD PYTHONUNBUFFERED=1 SIMFLOW_CACHE=/tmp/simflow-cache
nvidia-smi --query-gpu=name,clocks.sm,utilization.gpu --format=csv,noheader
date -u
python3 .scratch/s57/pdl.py .scratch/s57/layers_multi.json 3 > $OUT/pdl_multi.jsonl 2>$OUT/pdl_multi.err
tail -12 $OUT/pdl_multi.jsonl
date -u
python3 benchmarks/programmatic_launch.py benchmarks/results/suite_resnet50_tf32_session55_h200_2026-12-02.csv benchmarks/results/suite_vgg16_tf32_session56_h200_2026-12-02.csv benchmarks/results/suite_resnet50_fp16_session50_h200_2026-12-01.csv --out $OUT/programmatic.jsonl > $OUT/programmatic.txt 2>&1
tail -48 $OUT/programmatic.txt
date -u
timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py -k "programmatic or streams or each_launch or wgmma_nchw or wgmma_halo" > $OUT/pytest_a.txt 2>&1
tail -15 $OUT/pytest_a.txt
date -u
