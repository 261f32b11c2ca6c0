#!/usr/bin/env bash
# Session 37: ab73.sh (session 36's plan rules A/B, the changed tests with CUDA tensors,
# seed 3), then the persistent var_mean of misaligned bf16 rows (r1_033: 49% of the read
# ceiling, 4 warps over a 4096 tile of 2491 elements) under 4, 8 and 16 warps.
. "$(dirname "$0")/device_env.sh"
bash "$(dirname "$0")/ab73.sh"
TUNE_LOG=tune-ab74 TUNE_S=40 run_tune r1_033_var_mean_bfloat16_2491x50257_mem10_d0 \
  --variant "" --variant num_warps=8 --variant num_warps=16 --variant num_warps=2
