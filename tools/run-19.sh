#!/usr/bin/env bash
# GPU run 19 (session 6), in two calls: `tests` runs the whole test suite with CUDA
# tensors at COMMIT; `bench` the normalization suite (256-byte outer rows, one-tree max,
# exp2, 32-warp fp32 tiles) and the reduction suite with their peers (eager,
# torch.compile), and their charts.
export PYTHONPATH=$PWD/src
commit=${1:?commit}; what=${2:?tests or bench}
if [ "$what" = tests ]; then
  timeout 500 tools/gpu-tests $OUT/tests 8 > $OUT/tests-gpu-$commit.txt 2>&1
  tail -n 20 $OUT/tests-gpu-$commit.txt
  rm -rf $OUT/tests
else
  timeout 540 tools/gpu-bench $OUT $commit normalization reduction
  for f in $OUT/*-h200.json; do
    python3 -m layoutfuse.bench chart "$f" --png "${f%.json}.png" 2>&1 | tail -n 1
  done
fi
