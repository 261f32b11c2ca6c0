#!/usr/bin/env bash
# Session 36 (prepared; refusals left too little device time): the plans that
# loop_outer_l2 and loop_min_blocks = 2 changed (the fixed suite's strided normalizations,
# r3_101) against the old ones, kernel times, the measured choice off; with TESTS_S, the
# changed areas' tests with CUDA tensors under that limit; then SEEDS (default 3: r3_017,
# r3_088, r3_101 changed), each under RANDOM_S seconds. About 9 minutes with TESTS_S=150.
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
OLD=normalization.loop_outer_l2=0,normalization.loop_min_blocks=1
for c in norm_softmax_colmajor_reduce_outer_float32 norm_layernorm_colmajor_reduce_outer_float32 \
  norm_softmax_3d_reduce_middle_bfloat16 norm_layernorm_3d_reduce_middle_bfloat16 \
  r3_101_log_softmax_bfloat16_5142x64x28x28_mem0231_d0; do
  TUNE_LOG=tune-ab73 TUNE_S=${TUNE_S:-30} run_tune $c --tuning "" --tuning $OLD
done
echo "ab done $(( $(date +%s) - t0 )) s"
if [ -n "${TESTS_S:-}" ]; then
  TEST_PATHS="tests/schedulers/test_normalization.py tests/runtime/test_large_tensors.py \
    tests/schedulers/test_measure_candidates.py tests/codegen/test_normalization_online.py \
    tests/passes/test_output_layout.py tests/ir/test_math_rows.py tests/runtime/test_made_broadcasts.py" \
    timeout $TESTS_S tools/gpu-tests $out/tests 8 > /dev/null 2>&1
  echo "tests rc=$? $(( $(date +%s) - t0 )) s"
  cat $out/tests/tests-shard-*.log | grep -a "^FAILED\|^ERROR\|passed\|failed" > $out/tests-gpu-changed-$day-$commit-$gpu.txt
  cat $out/tests/tests-shard-*.log | grep -a "^E  \|^FAILED\|^ERROR\|passed\|failed" | cut -c1-300 | head -30; rm -rf $out/tests
fi
run_seeds ${SEEDS-3}  # SEEDS= (empty): none
echo "all $(( $(date +%s) - t0 )) s"
