#!/usr/bin/env bash
# GPU run 7 (session 3): grid-first program order on the mem1230 -> mem3210 transposes, the
# 4-D pointwise suite, and the whole test suite with CUDA tensors, at COMMIT.
export PYTHONPATH=$PWD/src
commit=${1:?commit}
python3 -m layoutfuse.bench.tune permute_4d_mem1230_to_mem3210_bfloat16 permute_4d_mem1230_to_mem3210_float32 \
  --variant '' --variant rest_first=false --variant '' --variant rest_first=false 2>&1 | grep -v "^\[" > $OUT/tune-pw-restfirst.txt
cat $OUT/tune-pw-restfirst.txt
tools/gpu-bench $OUT $commit pointwise:4d_
timeout ${TESTS_S:-240} tools/gpu-tests /tmp/t 12
cat /tmp/t/tests-shard-*.log > $OUT/tests-gpu-$commit.txt
