#!/usr/bin/env bash
# GPU probe 15 (session 5): is the X=256 bf16 split sum's slower read (87.8% vs 94.7% for
# two 128-column blocks, probe 14) a matter of power-of-two distances between the programs'
# R chunks (all programs starting on the same DRAM channels)? Splits whose chunks are and
# are not powers of two, for 512-, 256- and 1024-byte rows, bf16 and fp32.
export PYTHONPATH=$PWD/src
commit=${1:?commit}
T="python3 -m layoutfuse.bench.tune --profile"
{
$T bf16_mem120_sum12 --variant '' --variant split=964 --variant split=993 --variant split=1100 \
  --variant block_x=128,block_r=32,split=512 --variant block_x=128,block_r=32,split=482 \
  --variant block_x=128,block_r=32,split=1024 --variant block_x=128,block_r=32,split=528
$T bf16_mem012_sum01 --variant '' --variant split=482 --variant block_x=256,block_r=16,split=256 \
  --variant block_x=256,block_r=16,split=241
$T sweep_mem120_sum12 --variant '' --variant split=1024 --variant split=2048 --variant split=1300
} 2>&1 | grep -v "^\[\|UserWarning\|_warn_once" | tee $OUT/tune-bf16-camping-$commit.txt
