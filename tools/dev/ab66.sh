#!/usr/bin/env bash
# Session 34: the persistent window (``NormalizationParams.align_rows`` in the persistent
# mode) on the random seeds' normalizations it applies to, on and off
# (normalization.window_row_bytes=0), kernel time each; then random seed 2 at the head.
. "$(dirname "$0")/device_env.sh"
for c in r3_110_softmax_bfloat16_9747x50257_mem10_d0 r1_033_var_mean_bfloat16_2491x50257_mem10_d0 \
  r1_045_softmax_float32_1x1934x128256_mem021_d1 r1_089_log_softmax_float32_4093x15024_mem01_d1_s1.1.1 \
  r2_001_layernorm_bfloat16_3274x50257_mem10_d0 r2_081_layernorm_float32_70825x3771_mem01_d1 \
  r2_112_rmsnorm_bfloat16_373x2265_mem01_d1 r3_002_log_softmax_float16_2440x1536_mem10_d0 \
  r3_041_log_softmax_bfloat16_6122x3293_mem10_d0 r3_075_layernorm_bfloat16_3346x32000_mem10_d0; do
  TUNE_LOG=tune-ab66 TUNE_S=40 run_tune $c --tuning "" --tuning normalization.window_row_bytes=0
done
run_seeds ${SEEDS:-2}
