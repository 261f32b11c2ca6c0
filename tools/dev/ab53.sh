#!/usr/bin/env bash
# Session 29, one call: the whole test suite with CUDA tensors (PART=c), mode chain against
# loop/split on shapes the ops suite lacks (chain_ab.py), then the ops suite (PART=b).
set -u
out=${OUT:?}; commit=${COMMIT:?}; day=$(date -u +%Y%m%d)
PART=c OUT=$out COMMIT=$commit LIMIT=${TESTS_S:-250} bash tools/gpu-run.sh
t0=$(date +%s)
PYTHONPATH=$PWD/src:$PWD LAYOUTFUSE_CACHE_DIR=/tmp/lfc timeout ${AB_S:-90} python3 tools/dev/chain_ab.py $out/chain-ab-$day-$commit-h100.json > $out/chain-ab.txt 2>&1
echo "chain_ab rc=$? $(( $(date +%s) - t0 )) s"; grep -v Warn $out/chain-ab.txt | cut -c1-200 | tail -32; rm -f $out/chain-ab.txt
PART=b OUT=$out COMMIT=$commit THUNDER_FILTERS=none OVERHEAD=0 OPS_S=${OPS_S:-170} OPS_FILTERS=${OPS_FILTERS:-all} bash tools/gpu-run.sh
rm -f $out/ops*.txt $out/tests-summary.txt
