#!/usr/bin/env bash
# Session 20's second device call: the padding rule (reduction.pad_waste) against the old
# tiles on the seeds' cases it changes; the measured choice's device clock against each
# candidate's own time on seed 1's measured cases that were behind (each candidate: the
# rule's plan under one tuning alternative, LAYOUTFUSE_MEASURE=0); then random seed 1
# (PART=f without Thunder). Carry .wheels.
set -u
out=${OUT:?}; commit=${COMMIT:?}; day=$(date -u +%Y%m%d)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && echo h200 || echo h100)
export PYTHONPATH=$PWD/src:$PWD LAYOUTFUSE_CACHE_DIR=/tmp/lfcache PYTHONUNBUFFERED=1
f=$out/tune-ab21-$day-$commit-$gpu.txt
t0=$(date +%s)
LAYOUTFUSE_MEASURE=0 timeout 80 python3 -m benchmarks tune r1_000 r1_021 r2_088 r3_012 \
  --tuning= --tuning reduction.pad_waste=100 2>&1 | grep -v "Warn\|warn" > $f
echo "pad rc=$? $(( $(date +%s) - t0 )) s" >> $f
red="r1_013 r1_000 r1_099 r1_048"
norm="r1_059 r1_033"
timeout 60 python3 -m benchmarks tune $red $norm r1_036 --tuning= 2>&1 | grep -v "Warn\|warn" | sed 's/^/measured /' >> $f
echo "measured rc=$? $(( $(date +%s) - t0 )) s" >> $f
LAYOUTFUSE_MEASURE=0 timeout 80 python3 -m benchmarks tune $red --tuning= --tuning reduction.fold_rows=0 \
  --tuning reduction.carry_index=0 --tuning reduction.outer_row_bytes=256 --tuning reduction.narrow_outer_load_bytes=64 2>&1 | grep -v "Warn\|warn" >> $f
LAYOUTFUSE_MEASURE=0 timeout 50 python3 -m benchmarks tune $norm --tuning= \
  --tuning normalization.row_bytes=128,normalization.loop_row_bytes=128,normalization.inner_tile_bytes=32768,normalization.loop_tile=32768,normalization.cross_warps_per_sm=24 \
  --tuning normalization.row_bytes=32,normalization.loop_row_bytes=512,normalization.inner_tile_bytes=8192,normalization.thread_bytes=32,normalization.cross_tile_bytes=4096,normalization.cross_thread_bytes=16,normalization.cross_warps_per_sm=32 2>&1 | grep -v "Warn\|warn" >> $f
LAYOUTFUSE_MEASURE=0 timeout 30 python3 -m benchmarks tune r1_036 --tuning= --tuning pointwise.transpose_edge_bytes=128 \
  --tuning pointwise.transpose_edge_bytes=128,pointwise.transpose_thread_bytes=32 --tuning pointwise.transpose_edge_bytes=512 2>&1 | grep -v "Warn\|warn" >> $f
echo "candidates rc=$? $(( $(date +%s) - t0 )) s" >> $f
cut -c1-230 $f
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/runtime/test_measure.py tests/schedulers/test_reduction_tiles.py --device cuda 2>&1 | tail -3
PART=f OUT=$out COMMIT=$commit SEEDS="${SEEDS:-1}" RANDOM_S=${RANDOM_S:-260} THUNDER_FILTERS=none bash tools/gpu-run.sh
