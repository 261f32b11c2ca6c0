#!/usr/bin/env bash
# Session 29: cumsum mode chain with decoupled look-back. The scan tests with CUDA tensors,
# the ops suite's cumsum cases (defaults, peers beside), then layoutfuse alone under
# tuning variants (VARIANTS, ;-separated), each its own file.
set -u
out=${OUT:?}; commit=${COMMIT:?}; day=$(date -u +%Y%m%d)
nvidia-smi --query-gpu=name --format=csv,noheader
PART=d TESTS="tests/ir/test_scans.py tests/schedulers/test_scan.py" TESTS_S=150 OPS_FILTERS=cumsum \
  THUNDER_FILTERS=none OUT=$out COMMIT=$commit bash tools/gpu-run.sh
export PYTHONPATH=$PWD/src:$PWD LAYOUTFUSE_BENCH_COMMIT=$commit LAYOUTFUSE_CACHE_DIR=/tmp/lfcache
k=0
echo "$VARIANTS" | tr ';' '\n' | while read v; do
  [ -z "$v" ] && continue
  k=$((k + 1)); t0=$(date +%s)
  timeout 60 python3 -m benchmarks ops --filter cumsum --systems layoutfuse --tuning "$v" --out $out/ops-ab$k-$day-$commit-h100.json > $out/ab$k.txt 2>&1
  echo "== $v rc=$? $(( $(date +%s) - t0 )) s"; grep "^\[" $out/ab$k.txt | cut -c1-110; rm -f $out/ab$k.txt
done
