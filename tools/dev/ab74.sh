#!/usr/bin/env bash
# Session 37 (kernel times, the measured choice off): the online pair over 2-byte loads
# segmented (normalization.loop_online_narrow=0) with and without the one-wave tile
# (reduction.wave_tail); the aligned persistent rows (normalization.align_persistent)
# against the plain tile on the seed cases it changes; then the tests of the areas
# sessions 36 and 37 changed, with CUDA tensors, under TESTS_S seconds. About 6 minutes.
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
SEG=normalization.loop_online_narrow=0
for c in r3_101_log_softmax_bfloat16_5142x64x28x28_mem0231_d0 norm_softmax_3d_reduce_middle_bfloat16; do
  TUNE_LOG=tune-ab74-wave TUNE_S=45 run_tune $c --tuning "" --tuning $SEG --tuning $SEG,reduction.wave_tail=0.5
done
for c in r1_033_var_mean_bfloat16_2491x50257_mem10_d0 r3_110_softmax_bfloat16_9747x50257_mem10_d0 \
  r2_081_layernorm_float32_70825x3771_mem01_d1 r3_041_log_softmax_bfloat16_6122x3293_mem10_d0 \
  r2_001_layernorm_bfloat16_3274x50257_mem10_d0 r1_045_softmax_float32_1x1934x128256_mem021_d1; do
  TUNE_LOG=tune-ab74-align TUNE_S=${ALIGN_S:-25} run_tune $c --tuning "" --tuning normalization.align_persistent=1
done
echo "tunes $(( $(date +%s) - t0 )) s"
SEEDS= TESTS_S=${TESTS_S:-120} bash "$(dirname "$0")/ab75.sh"
