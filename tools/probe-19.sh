#!/usr/bin/env bash
# GPU probe 19 (session 6): tiles of the two-walk (looped) kernels over strided columns,
# and looped against persistent for (0, 2, 1) fp32; layoutfuse alone, params overridden
# through bench.tune (each variant checked against the reference first).
export PYTHONPATH=$PWD/src
commit=${1:?commit}
t() { python3 -m layoutfuse.bench.tune "$@" 2>&1 | grep -v "^\[\|UserWarning\|_warn_once\|^  \|^$\|warnings.warn"; }
{
t norm_softmax_colmajor_reduce_outer_float32 norm_layernorm_colmajor_reduce_outer_float32 \
  --variant "" --variant block_x=32,block_r=512,num_warps=32 --variant block_x=32,block_r=256,num_warps=32 \
  --variant block_x=64,block_r=128,num_warps=16 --variant block_x=16,block_r=512,num_warps=16 \
  --variant block_x=32,block_r=128,num_warps=8
t norm_softmax_colmajor_reduce_outer_bfloat16 norm_layernorm_colmajor_reduce_outer_bfloat16 \
  --variant "" --variant block_x=64,block_r=128,num_warps=16 --variant block_x=64,block_r=256,num_warps=16 \
  --variant block_x=32,block_r=512,num_warps=16 --variant block_x=32,block_r=256,num_warps=32 \
  --variant block_x=64,block_r=64,num_warps=8
t norm_softmax_3d_reduce_middle_bfloat16 norm_layernorm_3d_reduce_middle_bfloat16 \
  --variant "" --variant block_x=64,block_r=64,num_warps=4 --variant block_x=128,block_r=32,num_warps=8 \
  --variant block_x=32,block_r=128,num_warps=8 --variant block_x=64,block_r=128,num_warps=16
t norm_softmax_3d_reduce_middle_float32 norm_layernorm_3d_reduce_middle_float32 \
  --variant "" --variant mode=looped,block_x=32,block_r=128,num_warps=8 \
  --variant mode=looped,block_x=32,block_r=256,num_warps=16 --variant mode=looped,block_x=64,block_r=64,num_warps=8
} | tee $OUT/tune-normalization-loops-$commit.txt
