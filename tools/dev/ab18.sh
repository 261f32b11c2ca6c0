#!/usr/bin/env bash
# Session 18's A/B on the H100/H200 (one device call): transposes' grid order and tiles,
# small reductions' splits, normalizations over strided columns. Rule plans only
# (LAYOUTFUSE_MEASURE=0); eager and torch.compile figures are the seeds'.
set -u
out=${OUT:?}; commit=${COMMIT:?}; day=$(date -u +%Y%m%d)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && echo h200 || echo h100)
export PYTHONPATH=$PWD/src:$PWD LAYOUTFUSE_CACHE_DIR=/tmp/lfcache PYTHONUNBUFFERED=1 LAYOUTFUSE_MEASURE=0
f=$out/tune-ab18-$day-$commit-$gpu.txt
run() { t0=$(date +%s); timeout "$1" python3 -m benchmarks tune "${@:2}" 2>&1 | grep -v "Warn\|warn" >> $f; echo "rc=$? $(( $(date +%s) - t0 )) s" >> $f; }
echo "== transposes" >> $f
run 180 ${TR:-r2_038 r3_100 r2_026 r3_095 r1_035 r2_013 r2_000 r1_054 r1_068 r1_010 r3_090 r2_058 r1_030 r2_071 r1_055 r3_019} \
  --variant= --variant y_first=true,rest_first=false \
  --variant block_x=64,block_y=64,num_warps=8,y_first=true,rest_first=false \
  --variant block_x=32,block_y=32,num_warps=4 --variant block_x=32,block_y=32,num_warps=4,y_first=true,rest_first=false \
  --variant block_x=128,block_y=128,num_warps=16,y_first=true,rest_first=false
echo "== small reductions" >> $f
run 130 ${RD:-r1_070 r2_014 r1_040 r1_112 r2_119 r1_043 r3_032 r3_040 r3_073 r3_060 r1_008 r1_023} \
  --variant= --variant split=1 --variant split=16 --variant split=64 --variant split=256 --variant finish=kernel
echo "== normalizations" >> $f
run 110 ${NM:-r1_021 r1_077 r3_059 r2_048 r2_018 r2_008 r3_017 r3_052 r1_110 r3_015} \
  --tuning= --tuning normalization.min_row_bytes=128 --tuning normalization.loop_few_blocks=0 \
  --tuning normalization.row_bytes=256
echo "== session 18's rules off (var_mean: copies walked, rows stored across columns)" >> $f
run 60 r3_059 r1_077 --tuning= --tuning normalization.copies_min_bytes=1099511627776 \
  --tuning normalization.rowless_stores=0
echo "== topk (filtered candidates, then the chunks' top-k)" >> $f
t0=$(date +%s)
timeout 100 python3 tools/dev/tune_ops.py $out/tune-ops-topk-$day-$commit-$gpu.json --peers --filter topk \
  scan.split_filter=2 scan.split_filter=0 2>&1 | grep -v "Warn\|warn" | cut -c1-330 >> $f
echo "rc=$? $(( $(date +%s) - t0 )) s" >> $f
cat $f | cut -c1-260
