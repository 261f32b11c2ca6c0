#!/usr/bin/env bash
# Session 28: the largest random-suite losers of fffb7ba/eb18c3b under params variants,
# each kernel's device time (LAYOUTFUSE_MEASURE=0). Carry .wheels. About 200 s.
. "$(dirname "$0")/device_env.sh"
TUNE_LOG=tune-ab50
# r3_093: an inner max over rows of 255 fp32 (not 16-byte aligned), 46464 rows
TUNE_S=40 run_tune r3_093 --variant "" --variant block_x=32,block_r=256 \
  --variant block_x=8,block_r=256,num_warps=4 --variant block_x=64,block_r=256,num_warps=16 \
  --variant block_x=32,block_r=256,num_warps=4 --variant block_x=32,block_r=128,align_rows=4 \
  --variant block_x=16,block_r=128,align_rows=4,num_warps=4 --variant block_x=64,block_r=64,align_rows=4
# r2_106: fp16 sum over H of NCHW planes of 112 x 112 (outer, a program a plane)
TUNE_S=40 run_tune r2_106 --variant "" --variant block_r=16 --variant block_r=64,unroll=1 \
  --variant num_warps=8 --variant block_x=64,block_r=32 --variant block_x=128,block_r=16,unroll=1 \
  --variant block_x=64,block_r=64,unroll=1
# r2_008: var_mean over a dim of 32 strided by 184832 fp32 (normalization, outer, persistent)
TUNE_S=40 run_tune r2_008 --variant "" --variant block_x=64,num_warps=4 \
  --variant block_x=256,num_warps=8 --variant block_x=32,num_warps=2 --variant block_x=128,num_warps=4
# r1_077: var_mean over a strided dim of 7, the output stored transposed
TUNE_S=40 run_tune r1_077 --variant "" --variant block_x=64 --variant block_y=16 \
  --variant block_x=64,block_y=16,num_warps=8 --variant block_x=16,block_y=16
