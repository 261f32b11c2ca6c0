#!/usr/bin/env bash
# GPU run 8 (session 3): Y-first program order on flattened-Y transposes, then the 4-D
# pointwise suite, at COMMIT.
export PYTHONPATH=$PWD/src
commit=${1:?commit}
python3 -m layoutfuse.bench.tune permute_4d_mem0123_to_mem3210_bfloat16 permute_4d_mem0123_to_mem3210_float32 permute_4d_mem1203_to_mem3210_bfloat16 permute_4d_mem0132_to_mem3210_bfloat16 \
  --variant '' --variant y_first=false 2>&1 | grep -v "^\[" > $OUT/tune-pw-yfirst.txt
cat $OUT/tune-pw-yfirst.txt
timeout 150 tools/gpu-bench $OUT $commit pointwise:4d_
