#!/usr/bin/env bash
# GPU run 2 (session 3): reduction tile variants on the outer cases under target, then the
# 2-D and 3-D pointwise suites at this commit.
export PYTHONPATH=$PWD/src
commit=${1:?commit}
T="python3 -m layoutfuse.bench.tune"
{
$T bf16_mem012_sum0 bf16_mem012_sum1 bf16_mem012_sum01 bf16_mem021_sum2 bf16_mem201_sum2 bf16_mem120_sum12 bf16_mem102_sum1 bf16_mem120_sum2 \
  --variant '' --variant num_warps=4,unroll=1 --variant unroll=1 --variant num_warps=4 --variant block_r=4,unroll=4 --variant block_x=256,block_r=16,num_warps=4,unroll=1
$T sweep_mem012_sum1 sweep_mem102_sum1 sweep_mem120_sum1 sweep_mem210_sum1 pinned_mem012_sum1 pinned_mem102_sum1 \
  --variant '' --variant block_r=8 --variant num_warps=4 --variant block_r=8,num_warps=4
} 2>&1 | grep -v "^\[" > $OUT/tune-reduction.txt
grep -v "^read" $OUT/tune-reduction.txt | tail -80
timeout 400 tools/gpu-bench $OUT $commit pointwise:2d_ pointwise:3d_
