#!/usr/bin/env bash
# GPU run 20 (session 6, the last): the whole test suite with CUDA tensors at COMMIT
# (pointwise tiles of 16 rows for loads broadcast along Y), then the normalization suite
# with its peers and its chart.
export PYTHONPATH=$PWD/src
commit=${1:?commit}
timeout 330 tools/gpu-tests $OUT/tests 8 > $OUT/tests-gpu-$commit.txt 2>&1
tail -n 20 $OUT/tests-gpu-$commit.txt
rm -rf $OUT/tests
timeout 200 tools/gpu-bench $OUT $commit normalization
for f in $OUT/*-h200.json; do
  python3 -m layoutfuse.bench chart "$f" --png "${f%.json}.png" 2>&1 | tail -n 1
done
