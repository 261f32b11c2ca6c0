#!/usr/bin/env bash
# Prepared in session 35 for a later call: the fixed cost of full reductions of 50-130 MB
# (55-75% of the read ceiling where 0.6-1.8 GB ones reach 90-99%): the rule's split
# against one wave of resident programs and fewer, longer programs, and the 2-byte
# Welford's tile variants (bf16 var_means at 58-82% where fp32 ones reach 91-94%). Kernel
# times, the measured choice off; then random seed 1 at the head.
. "$(dirname "$0")/device_env.sh"
for c in r2_103_max_float32_103x128256_mem10_d01 r1_082_sum_bfloat16_19146x1536_mem01_d01; do
  TUNE_LOG=tune-ab70 TUNE_S=45 run_tune $c --variant "" --variant split=264 --variant split=528 \
    --variant split=1056 --variant split=2112 --variant finish=kernel
done
for c in r2_011_var_mean_float16_1993x23420_mem01_d01 r2_009_var_mean_bfloat16_756x128256_mem01_d01; do
  TUNE_LOG=tune-ab70 TUNE_S=45 run_tune $c --variant "" --variant num_warps=8 --variant unroll=1 \
    --variant block_r=1024 --variant split=528 --variant split=1056
done
run_seeds ${SEEDS:-1}
