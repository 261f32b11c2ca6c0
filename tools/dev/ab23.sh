#!/usr/bin/env bash
# Session 20's last device call: spanned outer tiles (reduction.span_row_bytes) against
# the stacked and plain tiles on the seeds' cases they change; r1_059's outer layer norm
# tile variants; the changed areas' tests with CUDA tensors; then the ops suite and the
# Thunder benchmark (PART=b, no overhead run). Carry .wheels.
set -u
out=${OUT:?}; commit=${COMMIT:?}; day=$(date -u +%Y%m%d)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && echo h200 || echo h100)
export PYTHONPATH=$PWD/src:$PWD LAYOUTFUSE_CACHE_DIR=/tmp/lfcache PYTHONUNBUFFERED=1
f=$out/tune-ab23-$day-$commit-$gpu.txt
t0=$(date +%s)
LAYOUTFUSE_MEASURE=0 timeout 60 python3 -m benchmarks tune r1_118 r3_005 r2_014 r3_079 \
  --tuning= --tuning reduction.span_row_bytes=0 2>&1 | grep -v "Warn\|warn" > $f
echo "span rc=$? $(( $(date +%s) - t0 )) s" >> $f
LAYOUTFUSE_MEASURE=0 timeout 40 python3 -m benchmarks tune r1_059 --variant block_x=64 \
  --variant block_x=32 --variant block_x=128 --variant block_x=32,num_warps=4 \
  --variant block_x=64,num_warps=4 --variant block_x=128,num_warps=16 2>&1 | grep -v "Warn\|warn" >> $f
echo "r1_059 rc=$? $(( $(date +%s) - t0 )) s" >> $f
cut -c1-230 $f
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/schedulers/test_reduction_spanned.py \
  tests/schedulers/test_reduction_stacked.py tests/runtime/test_measure.py --device cuda 2>&1 | tail -3
PART=b OUT=$out COMMIT=$commit OPS_S=${OPS_S:-150} THUNDER_S=${THUNDER_S:-210} OVERHEAD=0 bash tools/gpu-run.sh
rm -f $out/ops*.txt $out/thunder*.txt
