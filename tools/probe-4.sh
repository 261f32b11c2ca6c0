#!/usr/bin/env bash
# GPU run 4 (session 3): bf16 reductions under 80% after a5037e5: more warps per SM for
# the 512-program outer cases, fewer/longer chunks for split cases.
export PYTHONPATH=$PWD/src
T="python3 -m layoutfuse.bench.tune"
{
$T bf16_mem012_sum1 bf16_mem102_sum1 bf16_mem120_sum2 bf16_mem120_sum1 \
  --variant '' --variant split=2 --variant split=4 --variant num_warps=8 --variant num_warps=8,block_r=16
$T bf16_mem012_sum01 bf16_mem120_sum12 bf16_mem021_sum2 bf16_mem201_sum02 \
  --variant '' --variant num_warps=8 --variant num_warps=8,block_r=16 --variant finish=ticket --variant split=256 --variant split=64
$T bf16_mem012_sum12 bf16_mem120_sum01 bf16_mem102_sum02 \
  --variant '' --variant split=11 --variant split=6 --variant split=3 --variant unroll=1,block_r=4096
$T sweep_mem120_sum12 sweep_mem012_sum01 --variant '' --variant block_r=8
} 2>&1 | grep -v "^\[" > $OUT/tune-reduction-bf16.txt
grep -v "^read" $OUT/tune-reduction-bf16.txt | tail -80
