#!/usr/bin/env bash
# GPU probe 20 (session 6): wider rows for the two-walk kernels of (0, 2, 1) [32, 4096, 4096]
# (probe 19: 256-byte rows beat 128-byte ones there) and 32-warp tiles for the column-major
# [8192, 8192] (probe 19: layer norm fp32 58.2% at [256, 32] w32 against 54.7% at w16).
export PYTHONPATH=$PWD/src
commit=${1:?commit}
t() { python3 -m layoutfuse.bench.tune "$@" 2>&1 | grep -v "^\[\|UserWarning\|_warn_once\|^  \|^$\|warnings.warn"; }
{
t norm_softmax_3d_reduce_middle_float32 norm_layernorm_3d_reduce_middle_float32 \
  --variant mode=looped,block_x=64,block_r=64,num_warps=8 --variant mode=looped,block_x=128,block_r=32,num_warps=8 \
  --variant mode=looped,block_x=128,block_r=64,num_warps=16 --variant mode=looped,block_x=64,block_r=128,num_warps=16 \
  --variant mode=looped,block_x=256,block_r=16,num_warps=8 --variant mode=looped,block_x=64,block_r=32,num_warps=4
t norm_softmax_3d_reduce_middle_bfloat16 norm_layernorm_3d_reduce_middle_bfloat16 \
  --variant block_x=128,block_r=32,num_warps=8 --variant block_x=256,block_r=16,num_warps=8 \
  --variant block_x=128,block_r=64,num_warps=16 --variant block_x=256,block_r=32,num_warps=16 \
  --variant block_x=128,block_r=16,num_warps=4
t norm_softmax_colmajor_reduce_outer_float32 norm_layernorm_colmajor_reduce_outer_float32 \
  norm_softmax_colmajor_reduce_outer_bfloat16 norm_layernorm_colmajor_reduce_outer_bfloat16 \
  --variant "" --variant block_x=32,block_r=256,num_warps=32 --variant block_x=32,block_r=128,num_warps=16 \
  --variant block_x=32,block_r=128,num_warps=32
} | tee $OUT/tune-normalization-rows-$commit.txt
