#!/usr/bin/env bash
# GPU probe 16 (session 5): the column-block width of the split bf16 outer sums. Probe 15:
# X=256 reads 7% faster as two 128-column blocks (split 512) than as one (split 1024), and
# not because of power-of-two chunk distances. Here: X = 256, 512, 1024 (one split kernel
# each), blocks of 64..512 columns, each at one wave (1024 programs), each kernel profiled.
export PYTHONPATH=$PWD/src
commit=${1:?commit}
T="python3 -m layoutfuse.bench.tune --profile"
{
$T bf16_mem120_sum12 --variant block_x=256,block_r=16,split=1024 \
  --variant block_x=128,block_r=32,split=512 --variant block_x=64,block_r=64,split=256
$T bf16_mem021_sum02 --variant '' --variant block_x=256,block_r=16,split=512 \
  --variant block_x=128,block_r=32,split=256 --variant block_x=64,block_r=64,split=128
$T bf16_mem012_sum01 --variant '' --variant block_x=256,block_r=16,split=256 \
  --variant block_x=128,block_r=32,split=128
$T sweep_mem120_sum12 sweep_mem021_sum02 --variant '' --variant block_x=128,block_r=32
} 2>&1 | grep -v "^\[\|UserWarning\|_warn_once" | tee $OUT/tune-bf16-width-$commit.txt
