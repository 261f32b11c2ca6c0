#!/usr/bin/env bash
# Session 37's second call: the tests of the areas sessions 36 and 37 changed, with CUDA
# tensors, under TESTS_S seconds; then SEEDS (default 3), each under RANDOM_S seconds.
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
TEST_PATHS="tests/schedulers/test_normalization.py tests/runtime/test_large_tensors.py \
  tests/schedulers/test_measure_candidates.py tests/codegen/test_normalization_online.py \
  tests/codegen/test_normalization_aligned_rows.py tests/codegen/test_normalization_aligned_persistent.py \
  tests/schedulers/test_reduction_one_wave.py tests/passes/test_output_layout.py tests/ir/test_math_rows.py \
  tests/runtime/test_made_broadcasts.py" \
  timeout ${TESTS_S:-150} tools/gpu-tests $out/tests 8 > /dev/null 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"
cat $out/tests/tests-shard-*.log | grep -a "^FAILED\|^ERROR\|passed\|failed" > $out/tests-gpu-changed-$day-$commit-$gpu.txt
cat $out/tests/tests-shard-*.log | grep -a "^E  \|^FAILED\|^ERROR\|passed\|failed" | cut -c1-300 | head -30; rm -rf $out/tests
run_seeds ${SEEDS-3}
echo "all $(( $(date +%s) - t0 )) s"
