#!/usr/bin/env bash
# Session 36's first call: r3_088 (fp32 softmax over a strided dim, persistent in 32-byte
# rows whose starts are not sector-aligned: 36% of the read ceiling) against the looped
# and segmented plans; bf16 rows held whole against looped tiles on ab67.sh's two untimed
# cases and r2_036; then ab70.sh's full-reduction splits and 2-byte Welford tiles. Kernel
# times, the measured choice off. About 7 minutes.
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
TUNE_LOG=tune-ab71 TUNE_S=50 run_tune r3_088_softmax_float32_3192x2157x31_mem201_d0 --tuning "" \
  --tuning normalization.min_row_bytes=64 \
  --tuning normalization.min_row_bytes=64,normalization.loop_min_blocks=64
for c in r1_061_layernorm_bfloat16_2x1943x1x16381_mem0213_d3_s2.1.3 r3_041_log_softmax_bfloat16_6122x3293_mem10_d0 \
  r2_036_log_softmax_bfloat16_8x32789x1536_mem120_d2 r3_110_softmax_bfloat16_9747x50257_mem10_d0; do
  TUNE_LOG=tune-ab71 TUNE_S=45 run_tune $c --tuning "" \
    --tuning normalization.max_tile=2048,normalization.loop_tile=4096 \
    --tuning normalization.max_tile=2048,normalization.loop_tile=8192
done
echo "rows done $(( $(date +%s) - t0 )) s"
for c in r2_103_max_float32_103x128256_mem10_d01 r1_082_sum_bfloat16_19146x1536_mem01_d01; do
  TUNE_LOG=tune-ab71 TUNE_S=40 run_tune $c --variant "" --variant split=264 --variant split=528 \
    --variant split=1056 --variant finish=kernel
done
for c in r2_011_var_mean_float16_1993x23420_mem01_d01 r2_009_var_mean_bfloat16_756x128256_mem01_d01; do
  TUNE_LOG=tune-ab71 TUNE_S=40 run_tune $c --variant "" --variant num_warps=8 --variant unroll=1 \
    --variant block_r=1024 --variant split=528
done
echo "all $(( $(date +%s) - t0 )) s"
