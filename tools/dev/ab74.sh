#!/usr/bin/env bash
# Session 37 (kernel times, the measured choice off): persistent rows that read slowly,
# r1_033's var_mean of misaligned bf16 rows (49% of the read ceiling, 4 warps over a 4096
# tile of 2491 elements) and r3_110's bf16 softmax (9747 of a 16384 tile, 16 warps),
# under other warps and the looped mode; the aligned persistent rows
# (normalization.align_persistent) against the plain tile on the seed cases it changes;
# the online pair over 2-byte loads segmented (normalization.loop_online_narrow=0) with
# and without the one-wave tile (reduction.wave_tail). About 6 minutes.
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
TUNE_LOG=tune-ab74 TUNE_S=50 run_tune r1_033_var_mean_bfloat16_2491x50257_mem10_d0 \
  --variant "" --variant num_warps=8 --variant num_warps=16 --variant num_warps=2 \
  --variant mode=looped,block_r=1024,num_warps=4
TUNE_LOG=tune-ab74 TUNE_S=50 run_tune r3_110_softmax_bfloat16_9747x50257_mem10_d0 \
  --variant "" --variant num_warps=8 --variant num_warps=32 --variant mode=looped,block_r=4096,num_warps=8
SEG=normalization.loop_online_narrow=0
for c in r3_101_log_softmax_bfloat16_5142x64x28x28_mem0231_d0 norm_softmax_3d_reduce_middle_bfloat16; do
  TUNE_LOG=tune-ab74-wave TUNE_S=45 run_tune $c --tuning "" --tuning $SEG --tuning $SEG,reduction.wave_tail=0.5
done
for c in r1_033_var_mean_bfloat16_2491x50257_mem10_d0 r3_110_softmax_bfloat16_9747x50257_mem10_d0 \
  r2_081_layernorm_float32_70825x3771_mem01_d1 r3_041_log_softmax_bfloat16_6122x3293_mem10_d0 \
  r2_001_layernorm_bfloat16_3274x50257_mem10_d0 r1_045_softmax_float32_1x1934x128256_mem021_d1; do
  TUNE_LOG=tune-ab74-align TUNE_S=${ALIGN_S:-30} run_tune $c --tuning "" --tuning normalization.align_persistent=1
done
echo "all $(( $(date +%s) - t0 )) s"
