#!/bin/bash
# issue 58: why the 3x3 TF32 layers stay at 0.84-0.88 of cuDNN: simflow profile + explain on the GPU, wgmma_nhwc's
# suite winner against wgmma_halo (reads x in place) on resnet50-3x3-256-256-14, and the 1x1 1024->256 winner
R=$OUT/res; mkdir -p $R
L=resnet50-3x3-256-256-14
python3 -m simflow profile wgmma_nhwc -p $L -P precision=tf32 -P tile_n=192 -P stream_k=true --results $R > $OUT/p1.txt 2>&1
python3 -m simflow profile wgmma_halo -p $L --results $R > $OUT/p2.txt 2>&1
python3 -m simflow profile wgmma_halo -p $L -P tile_n=512 --results $R > $OUT/p3.txt 2>&1
python3 -m simflow explain variant=wgmma_halo,tile_n=256 variant=wgmma_nhwc --results $R > $OUT/e1.txt 2>&1
python3 -m simflow explain variant=wgmma_halo,tile_n=256 variant=wgmma_halo,tile_n=512 --results $R > $OUT/e2.txt 2>&1
tail -n 25 $OUT/p1.txt $OUT/p2.txt $OUT/p3.txt | cut -c1-160
head -70 $OUT/e1.txt; head -40 $OUT/e2.txt
