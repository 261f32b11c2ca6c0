#!/usr/bin/env bash
# GPU run 11 (session 4): variants of the sibling sums' split reduction kernel over strided
# columns (var_sums, column-major [8192, 8192]), the whole test suite with CUDA tensors,
# and the demo; at COMMIT.
export PYTHONPATH=$PWD/src
commit=${1:?commit}
T="python3 -m layoutfuse.bench.tune"
{
$T norm_varsums_colmajor_reduce_outer_float32 --variant '' --variant split=64 --variant split=128 \
  --variant split=16 --variant block_r=8 --variant block_r=8,split=64 --variant block_x=128,block_r=32 \
  --variant finish=kernel
$T norm_varsums_colmajor_reduce_outer_bfloat16 --variant '' --variant split=20 --variant split=80 \
  --variant block_x=256,block_r=16 --variant block_x=256,block_r=16,split=80 --variant block_r=16,unroll=1
} 2>&1 | grep -v "^\[" | tee $OUT/tune-varsums-$commit.txt
timeout ${TESTS_S:-220} tools/gpu-tests /tmp/t 12
cat /tmp/t/tests-shard-*.log > $OUT/tests-gpu-$commit.txt
python3 -m layoutfuse.demo > $OUT/demo-$commit.log 2>&1; tail -3 $OUT/demo-$commit.log
