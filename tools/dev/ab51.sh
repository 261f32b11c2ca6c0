#!/usr/bin/env bash
# Session 29: the chained one-pass cumsum (mode chain). The prototype's tiles against a copy
# and torch (tools/dev/chain_bench.py), the scan tests with CUDA tensors, then the ops
# suite's cumsum cases with chain (the default) and with chain_links=0 (loop/split).
set -u
out=${OUT:?}; commit=${COMMIT:?}
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv
t0=$(date +%s)
PYTHONPATH=$PWD/src:$PWD:tools/dev timeout ${CHAIN_S:-120} python3 tools/dev/chain_bench.py > $out/chain-bench.txt 2>&1
echo "chain_bench rc=$? $(( $(date +%s) - t0 )) s"; grep -v Warn $out/chain-bench.txt | cut -c1-200
PART=d TESTS="tests/ir/test_scans.py tests/schedulers/test_scan.py" TESTS_S=150 OPS_FILTERS=cumsum \
  THUNDER_FILTERS=none OPS_AB="scan.chain_links=0" OPS_AB_FILTER=cumsum OUT=$out COMMIT=$commit bash tools/gpu-run.sh
