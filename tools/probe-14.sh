#!/usr/bin/env bash
# GPU probe 14 (session 5): where the time of the X=256 bf16 split sums goes (each kernel's
# device time: the split reduction and its finishing kernel), against narrower column
# blocks (fewer partials) and other splits; then probe 13 (cooperative softmax, 128-byte rows).
export PYTHONPATH=$PWD/src
commit=${1:?commit}
python3 -m layoutfuse.bench.tune bf16_mem120_sum12 bf16_mem210_sum12 --profile --variant '' \
  --variant split=512 --variant split=745 --variant block_x=128,block_r=32,split=512 \
  --variant block_x=64,block_r=64,split=256 --variant block_x=128,block_r=32,split=256 2>&1 \
  | grep -v "^\[" | tee $OUT/tune-bf16-x256-profile-$commit.txt
python3 -m layoutfuse.bench.tune sweep_mem120_sum12 bf16_mem012_sum01 --profile --variant '' 2>&1 \
  | grep -v "^\[" | tee -a $OUT/tune-bf16-x256-profile-$commit.txt
timeout 300 bash tools/probe-13.sh $commit
