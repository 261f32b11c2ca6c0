#!/usr/bin/env bash
# GPU run 14 (session 5): (1) bf16 outer sums with 512-byte rows that do not split
# (mem120_sum2 splits 2, mem210_sum1 none): 256-byte rows instead? (2) the outer looped
# normalization tile on the column-major cases, store pass forwards: 4096 / 8192 / 16384
# elements, 8 or 16 warps; (3) the strided middle cases looped instead of persistent.
export PYTHONPATH=$PWD/src
commit=${1:?commit}
python3 -m layoutfuse.bench.tune bf16_mem120_sum2 bf16_mem210_sum1 bf16_mem012_sum1 --profile \
  --variant '' --variant block_x=128,block_r=32,split=1 --variant block_x=128,block_r=32 2>&1 \
  | grep -v "^\[\|UserWarning\|_warn_once" | tee $OUT/tune-bf16-rows512-$commit.txt
mkdir -p /tmp/tc
{
python3 -m layoutfuse.bench.tune_constants normalization layoutfuse.schedulers.normalization \
  "" STORE_WALK_BACK=0 STORE_WALK_BACK=0,LOOP_OUTER_TILE=8192 \
  STORE_WALK_BACK=0,LOOP_OUTER_TILE=16384 STORE_WALK_BACK=0,LOOP_OUTER_TILE=8192,LOOP_OUTER_WARPS=16 \
  STORE_WALK_BACK=0,LOOP_OUTER_TILE=16384,LOOP_OUTER_WARPS=16 \
  --filter colmajor_reduce_outer --out /tmp/tc 2>&1 | grep -v "^\[" | grep -v "^  " | tail -n 8
python3 -m layoutfuse.bench.tune_constants normalization layoutfuse.schedulers.normalization \
  STORE_WALK_BACK=0 STORE_WALK_BACK=0,MAX_TILE=16384 STORE_WALK_BACK=0,MAX_TILE=16384,LOOP_OUTER_TILE=8192 \
  --filter reduce_middle --out /tmp/tc 2>&1 | grep -v "^\[" | grep -v "^  " | tail -n 8
} | tee $OUT/tune-normalization-tiles-$commit.txt
