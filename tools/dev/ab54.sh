#!/usr/bin/env bash
# Session 29, the last call: the changed areas' tests with CUDA tensors, chain_ab and the
# ops suite's cumsum cases at the chain's final rule.
set -u
out=${OUT:?}; commit=${COMMIT:?}; day=$(date -u +%Y%m%d)
export PYTHONPATH=$PWD/src:$PWD LAYOUTFUSE_BENCH_COMMIT=$commit
t0=$(date +%s)
TEST_PATHS="tests/ir/test_scans.py tests/schedulers/test_scan.py tests/codegen/test_scan_ptx.py tests/runtime/test_interrupted_launches.py tests/frontend/test_nvfuser_execute.py tests/schedulers/test_normalization.py::test_looped_rows_keep_their_second_read_in_l2" \
  timeout ${TESTS_S:-100} tools/gpu-tests $out/tests 8 > /dev/null 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"
cat $out/tests/tests-shard-*.log | grep -a "^FAILED\|^ERROR\|passed\|failed" > $out/tests-gpu-changed-$day-$commit-h100.txt
cat $out/tests-gpu-changed-$day-$commit-h100.txt; rm -rf $out/tests
t0=$(date +%s)
LAYOUTFUSE_CACHE_DIR=/tmp/lfc timeout ${AB_S:-60} python3 tools/dev/chain_ab.py $out/chain-ab-$day-$commit-h100.json 2>&1 | grep -v Warn | cut -c1-200
echo "chain_ab $(( $(date +%s) - t0 )) s"
LAYOUTFUSE_CACHE_DIR=/tmp/lfc timeout 45 python3 -m benchmarks ops --filter cumsum --out $out/ops-cumsum-$day-$commit-h100.json 2>&1 | grep -v "Warn\|warn" | tail -9 | cut -c1-200
