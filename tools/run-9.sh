#!/usr/bin/env bash
# GPU run 9 (session 4): the whole test suite with CUDA tensors (and the split-sibling
# tests with --full), the normalization suite (sibling sums over strided columns as one
# split reduction kernel; the looped Welford with one division per chunk), the bf16
# reductions again, split variants of the X=256 bf16 outer sum, the demo; at COMMIT.
export PYTHONPATH=$PWD/src
commit=${1:?commit}
timeout ${TESTS_S:-240} tools/gpu-tests /tmp/t 12
cat /tmp/t/tests-shard-*.log > $OUT/tests-gpu-$commit.txt
tail -n 2 /tmp/t/tests-shard-*.log | grep -E "passed|failed" ; grep -h "^FAILED" /tmp/t/tests-shard-*.log | head
tools/gpu-bench $OUT $commit normalization reduction:bf16
python3 -m layoutfuse.bench.tune bf16_mem120_sum12 --variant '' --variant split=512 --variant split=768 \
  --variant block_r=32,unroll=1 --variant block_r=8,unroll=4 2>&1 | grep -v "^\[" > $OUT/tune-bf16-x256-$commit.txt
cat $OUT/tune-bf16-x256-$commit.txt
python3 -m layoutfuse.demo > $OUT/demo-$commit.log 2>&1; tail -3 $OUT/demo-$commit.log
