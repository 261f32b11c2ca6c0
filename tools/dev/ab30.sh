#!/usr/bin/env bash
# Session 21's fifth device call: folds of 2 rows (reduction.fold_least=2 against 4) on the
# three seed cases whose plans it changes (tools/dev/diffplans.py): r2_037 (a fp16 max over
# rows 8 bytes aligned, 45 us folded at 4e4abfc, 57-72 us unfolded since), r3_051, r3_065.
set -u
out=${OUT:?}; commit=${COMMIT:?}; day=$(date -u +%Y%m%d)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && echo h200 || echo h100)
export PYTHONPATH=$PWD/src:$PWD PYTHONUNBUFFERED=1 LAYOUTFUSE_CACHE_DIR=/tmp/lfcache
t0=$(date +%s)
LAYOUTFUSE_MEASURE=0 timeout 150 python3 -m benchmarks tune r2_037 r3_051 r3_065 \
  --tuning "" --tuning reduction.fold_least=2 --tuning reduction.fold_least=2,reduction.fold_rows=1 2>&1 \
  | grep -v "Warn\|warn" > $out/tune-ab30-$day-$commit-$gpu.txt
echo "tune rc=$? $(( $(date +%s) - t0 )) s"; cut -c1-220 $out/tune-ab30-$day-$commit-$gpu.txt | tail -12
