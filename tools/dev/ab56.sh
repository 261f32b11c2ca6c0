#!/usr/bin/env bash
# Session 30, the first call (carry .wheels and .old, the tree before the change under
# test: `git archive <base> src | tar -x -C .old`): the changed areas' tests with CUDA
# tensors; session 29's final chain rule (chain_ab, the ops suite's cumsum cases); the
# random seeds' var_mean cases with the reduction kernels' unread results unstored, beside
# the old tree's plans (layoutfuse only) in the same run. About 450 s.
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
TEST_PATHS="tests/ir/test_scans.py tests/schedulers/test_scan.py tests/codegen/test_scan_ptx.py tests/runtime/test_interrupted_launches.py tests/frontend/test_nvfuser_execute.py tests/schedulers/test_normalization.py::test_looped_rows_keep_their_second_read_in_l2 tests/segmenter/test_unread_results.py tests/segmenter/test_reduction_epilogue.py tests/ir/test_reduction_rows.py" \
  timeout ${TESTS_S:-100} tools/gpu-tests $out/tests 8 > /dev/null 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"
cat $out/tests/tests-shard-*.log | grep -a "^FAILED\|^ERROR\|passed\|failed" > $out/tests-gpu-changed-$day-$commit-$gpu.txt
cat $out/tests/tests-shard-*.log | grep -a "^E  " | head -20 | cut -c1-250
cat $out/tests-gpu-changed-$day-$commit-$gpu.txt; rm -rf $out/tests
t0=$(date +%s)
timeout ${AB_S:-50} python3 tools/dev/chain_ab.py $out/chain-ab-$day-$commit-$gpu.json 2>&1 | grep -v Warn | cut -c1-200
echo "chain_ab $(( $(date +%s) - t0 )) s"
timeout ${CUMSUM_S:-45} python3 -m benchmarks ops --filter cumsum --out $out/ops-cumsum-$day-$commit-$gpu.json 2>&1 | grep -v "Warn\|warn" | tail -9 | cut -c1-200
for s in ${SEEDS:-1 2 3}; do
  t0=$(date +%s)
  timeout ${VM_S:-60} python3 -m benchmarks suite random --seed $s --cases 120 --filter var_mean --out $out/random_seed$s-var_mean-$day-$commit-$gpu.json 2>&1 | grep "^\[\|behind" | cut -c1-160
  echo "seed $s var_mean $(( $(date +%s) - t0 )) s"
  t0=$(date +%s)
  PYTHONPATH=$PWD/.old/src:$PWD:/tmp/tsite LAYOUTFUSE_CACHE_DIR=/tmp/lfold timeout ${OLD_S:-40} python3 -m benchmarks suite random --seed $s --cases 120 --filter var_mean --systems layoutfuse --out $out/random_seed$s-var_mean-old-$day-$commit-$gpu.json 2>&1 | grep "^\[" | cut -c1-160
  echo "seed $s var_mean old $(( $(date +%s) - t0 )) s"
done
