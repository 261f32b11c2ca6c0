#!/usr/bin/env bash
# GPU run 21 (session 6): the whole test suite with CUDA tensors at COMMIT (sibling
# reductions' unrolled fp32 split step), then var_sums over strided columns timed alone.
export PYTHONPATH=$PWD/src
commit=${1:?commit}
timeout 300 tools/gpu-tests $OUT/tests 8 > $OUT/tests-gpu-$commit.txt 2>&1
tail -n 12 $OUT/tests-gpu-$commit.txt
rm -rf $OUT/tests
timeout 40 python3 -m layoutfuse.bench.profile normalization --filter varsums_colmajor 2>&1 \
  | grep -v "^\[\|UserWarning\|_warn_once\|^  \|^$\|warnings.warn" | tee $OUT/profile-varsums-$commit.txt
