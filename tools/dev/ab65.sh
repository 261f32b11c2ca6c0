#!/usr/bin/env bash
# Session 33's prepared next call (not run): random seed 3 at the head (r3_093's new scalar
# inner candidate, r3_021), then tiles of two losers of seed 1 at c4ae9f7: r1_059 (fp32
# layer norm over a strided dim of 61, 127 against torch.compile's 118 us) and r1_090 (fp32
# RMS norm over rows of 6144, 172 rows: 7.5 against 6.4 us).
. "$(dirname "$0")/device_env.sh"
run_seeds ${SEEDS:-3}
TUNE_LOG=tune-ab65 TUNE_S=60 run_tune r1_059_layernorm_float32_1x694173x61_mem201_d2_s2.2.1 --variant= \
  --variant block_x=64,num_warps=8 --variant block_x=256,num_warps=16 --variant num_warps=8 --variant block_x=64,num_warps=16 \
  --variant block_x=256,num_warps=32
TUNE_LOG=tune-ab65 TUNE_S=60 run_tune r1_090_rmsnorm_float32_2x86x6144_mem102_d2 --variant= \
  --variant num_warps=8 --variant num_warps=32 --variant num_warps=4
# r1_036 (a bf16 copy whose C of 3 is padded to 4; 24% of copy for all three systems): the
# padded continuation's tile against the rule's
TUNE_LOG=tune-ab65 TUNE_S=60 run_tune r1_036_copy_bfloat16_343288x3x14x14_mem3021_tomem3201_s1.1.1 \
  --tuning "" --tuning pointwise.padded_continuation=1
