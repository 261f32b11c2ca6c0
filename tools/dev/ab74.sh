#!/usr/bin/env bash
# Session 37: ab73.sh without its seeds (session 36's plan rules A/B, the changed tests with
# CUDA tensors under TESTS_S), then persistent rows that read slowly: r1_033's var_mean of
# misaligned bf16 rows (49% of the read ceiling, 4 warps over a 4096 tile of 2491
# elements) and r3_110's bf16 softmax (9747 of a 16384 tile, 16 warps) under other warps
# and the looped mode; the aligned persistent rows A/B. About 8 minutes with TESTS_S=150;
# seeds follow in another call.
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
SEEDS= bash "$(dirname "$0")/ab73.sh"
TUNE_LOG=tune-ab74 TUNE_S=50 run_tune r1_033_var_mean_bfloat16_2491x50257_mem10_d0 \
  --variant "" --variant num_warps=8 --variant num_warps=16 --variant num_warps=2 \
  --variant mode=looped,block_r=1024,num_warps=4
TUNE_LOG=tune-ab74 TUNE_S=50 run_tune r3_110_softmax_bfloat16_9747x50257_mem10_d0 \
  --variant "" --variant num_warps=8 --variant num_warps=32 --variant mode=looped,block_r=4096,num_warps=8
# the persistent aligned rows (align_persistent) against the plain tile: every seed case
# whose plan it changes that has headroom, and two at 95%
for c in r1_033_var_mean_bfloat16_2491x50257_mem10_d0 r3_110_softmax_bfloat16_9747x50257_mem10_d0 \
  r2_081_layernorm_float32_70825x3771_mem01_d1 r3_041_log_softmax_bfloat16_6122x3293_mem10_d0 \
  r2_001_layernorm_bfloat16_3274x50257_mem10_d0 r1_045_softmax_float32_1x1934x128256_mem021_d1; do
  TUNE_LOG=tune-ab74-align TUNE_S=${ALIGN_S:-30} run_tune $c --tuning "" --tuning normalization.align_persistent=1
done
echo "all $(( $(date +%s) - t0 )) s"
