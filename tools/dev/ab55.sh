#!/usr/bin/env bash
# Session 30, the first call: session 29's changed tests with CUDA tensors, chain_ab and the
# ops suite's cumsum cases at the chain's final rule (901d764), then ab50's random losers
# under params variants. Carry .wheels. About 450 s.
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
TEST_PATHS="tests/ir/test_scans.py tests/schedulers/test_scan.py tests/codegen/test_scan_ptx.py tests/runtime/test_interrupted_launches.py tests/frontend/test_nvfuser_execute.py tests/schedulers/test_normalization.py::test_looped_rows_keep_their_second_read_in_l2" \
  timeout ${TESTS_S:-100} tools/gpu-tests $out/tests 8 > /dev/null 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"
cat $out/tests/tests-shard-*.log | grep -a "^FAILED\|^ERROR\|passed\|failed" > $out/tests-gpu-changed-$day-$commit-$gpu.txt
cat $out/tests-gpu-changed-$day-$commit-$gpu.txt; rm -rf $out/tests
t0=$(date +%s)
timeout ${AB_S:-60} python3 tools/dev/chain_ab.py $out/chain-ab-$day-$commit-$gpu.json 2>&1 | grep -v Warn | cut -c1-200
echo "chain_ab $(( $(date +%s) - t0 )) s"
timeout 45 python3 -m benchmarks ops --filter cumsum --out $out/ops-cumsum-$day-$commit-$gpu.json 2>&1 | grep -v "Warn\|warn" | tail -9 | cut -c1-200
[ "${AB50:-1}" = 1 ] && OUT=$out COMMIT=$commit bash "$(dirname "$0")/ab50.sh"
