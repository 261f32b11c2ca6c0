#!/usr/bin/env bash
# GPU run 3 (session 3): the reduction suite at COMMIT; transpose tile variants of the
# bf16 4-D cases to mem3210 that sit at 84-86%.
export PYTHONPATH=$PWD/src
commit=${1:?commit}
tools/gpu-bench $OUT $commit reduction
python3 -m layoutfuse.bench.tune permute_4d_mem0123_to_mem3210_bfloat16 permute_4d_mem1023_to_mem3210_bfloat16 permute_4d_mem2130_to_mem3210_bfloat16 permute_4d_mem1230_to_mem3210_bfloat16 \
  --variant '' --variant num_warps=8 --variant num_warps=32 --variant block_x=64 --variant block_y=64 --variant block_x=256,block_y=64 2>&1 | grep -v "^\[" > $OUT/tune-pw-4d.txt
tail -30 $OUT/tune-pw-4d.txt
