#!/usr/bin/env bash
# GPU run 16 (session 5): the whole test suite with CUDA tensors at COMMIT; the var_sums
# cases (sibling sums keep 1 KB bf16 rows); smaller outer looped tiles on the strided
# middle bf16 cases (2048 column blocks).
export PYTHONPATH=$PWD/src
commit=${1:?commit}
timeout 400 tools/gpu-tests $OUT/tests 8 > $OUT/tests-gpu-$commit.txt 2>&1
cat $OUT/tests-gpu-$commit.txt | tail -n 20
rm -rf $OUT/tests
timeout 60 tools/gpu-bench $OUT $commit normalization:varsums
mkdir -p /tmp/tc
timeout 100 python3 -m layoutfuse.bench.tune_constants normalization layoutfuse.schedulers.normalization \
  "" LOOP_OUTER_TILE=2048 LOOP_OUTER_WARPS=4 LOOP_OUTER_TILE=2048,LOOP_OUTER_WARPS=4 \
  --filter middle_bfloat16 --out /tmp/tc 2>&1 | grep -v "^\[" | grep -v "^  " | tail -n 6 \
  | tee $OUT/tune-normalization-middle-$commit.txt
