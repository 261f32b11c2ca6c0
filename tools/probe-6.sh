#!/usr/bin/env bash
# GPU probe 6 (session 4): the cooperative column-split softmax (bench.probe_outer coop) on
# the issue-5 strided shapes; split variants of the bf16 outer sums under 80% (read flush).
export PYTHONPATH=$PWD/src
commit=${1:?commit}
P="python3 -m layoutfuse.bench.probe_outer"
{
for dt in float32 bfloat16; do
  $P coop --dtype $dt --shape 1,8192,8192 --tile 64 --split 64 --warps 8,4
  $P coop --dtype $dt --shape 1,8192,8192 --tile 64 --split 32 --warps 16,8
  $P coop --dtype $dt --shape 1,8192,8192 --tile 32 --split 32,64 --warps 8,4
  $P coop --dtype $dt --shape 1,8192,8192 --tile 128 --split 64,128 --warps 16,8
  $P coop --dtype $dt --shape 32,4096,4096 --tile 64 --split 32,64 --warps 8,4
done
} 2>&1 | grep -v "^\[" | tee $OUT/probe-coop-$commit.txt
T="python3 -m layoutfuse.bench.tune"
{
$T bf16_mem201_sum2 --variant '' --variant split=1 --variant split=2,finish=ticket --variant split=4,finish=ticket \
  --variant split=4 --variant split=8 --variant block_x=256,block_r=8,split=1 --variant block_x=256,block_r=8,split=2,finish=ticket
$T bf16_mem012_sum01 --variant '' --variant split=256 --variant split=600 --variant block_x=128,split=300,finish=ticket \
  --variant block_x=64,split=150,finish=ticket --variant block_x=128,split=600,finish=ticket --variant block_x=256,split=600
$T bf16_mem012_sum1 --variant '' --variant split=2,finish=ticket --variant split=3,finish=ticket --variant split=4,finish=ticket \
  --variant block_x=256,block_r=16
} 2>&1 | grep -v "^\[" | tee $OUT/tune-bf16-split-$commit.txt
