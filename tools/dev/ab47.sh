#!/usr/bin/env bash
# Session 27's one call (device starts kept failing): A/Bs of small-problem rules
# (LAYOUTFUSE_MEASURE=0), then the tests of what changed since the whole suite last ran
# with CUDA tensors (079c82e) on the GPU, 8 shards. Carry .wheels. About 480 s.
. "$(dirname "$0")/device_env.sh"
# (Its multi-case run_tune lines failed: the cases followed --profile, which argparse
# refuses; run_tune now puts them first. They ran again by hand as tune-ab48.)
TUNE_LOG=tune-ab47
TUNE_S=45 run_tune r3_017 --variant "" --variant mode=persistent,block_x=8,block_r=4096,num_warps=16 \
  --variant mode=persistent,block_x=8,block_r=4096,num_warps=32 \
  --variant mode=persistent,block_x=16,block_r=4096,num_warps=32
TUNE_S=90 run_tune r3_084 r3_109 r3_066 r3_068 r2_026 r2_055 r3_080 r1_092 r3_091 r1_054 \
  --tuning "" --tuning pointwise.transpose_fill=2 --tuning pointwise.transpose_fill=4
TUNE_S=60 run_tune r3_062 r1_008 r2_119 r3_021 r1_040 r1_070 \
  --tuning "" --tuning reduction.few_rounds_inner=1 --tuning "" --tuning reduction.few_rounds_inner=1
TUNE_S=50 run_tune r3_047 r1_076 r2_025 r2_051 r3_013 r2_071 r3_001 \
  --tuning "" --tuning pointwise.tile_fill=4 --tuning pointwise.tile_fill=8
t0=$(date +%s)
LAYOUTFUSE_MEASURE=0 timeout 70 python3 tools/dev/tune_ops.py $out/tune-ops-ab47-$day-$commit-$gpu.json \
  --peers --filter "take_along_axis_k|index_select|embedding" pointwise.tile_fill=0 \
  pointwise.tile_fill=4 pointwise.tile_fill=8 2>&1 | grep -v "Warn\|warn" \
  | tee -a $out/tune-ab47-$day-$commit-$gpu.txt | cut -c1-260
echo "ops rc=$? $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
TEST_PATHS="tests/runtime tests/schedulers/test_reduction_few_rounds.py tests/schedulers/test_pointwise_tiles.py tests/segmenter/test_cross_reductions.py tests/ir/test_math_rows.py tests/schedulers/test_reduction_spanned.py tests/ir/test_indexing_ops.py tests/ir/test_random.py tests/test_generated_programs.py tests/codegen/test_reduction_carried_index.py tests/codegen/test_normalization_aligned_rows.py tests/codegen/test_reduction_fold.py tests/schedulers/test_sibling_reductions.py" \
  timeout ${TESTS_S:-170} tools/gpu-tests $out/tests 8 > $out/tests-summary.txt 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"; tail -6 $out/tests-summary.txt
cat $out/tests/tests-shard-*.log | grep -a "^FAILED\|^ERROR\|passed\|failed" > $out/tests-gpu-$day-$commit-$gpu.txt
cat $out/tests/tests-shard-*.log | grep -a "^E  \|^FAILED\|^ERROR" | cut -c1-300 | head -30
rm -rf $out/tests $out/tests-summary.txt
