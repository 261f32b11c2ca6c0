#!/usr/bin/env bash
# GPU run 17 (session 5): the whole test suite with CUDA tensors at COMMIT (a Welford's
# reciprocal per tile in reduction kernels; per-row loads in pointwise kernels), the
# normalization suite with its peers, and each kernel's time on the long rows.
export PYTHONPATH=$PWD/src
commit=${1:?commit}
timeout 330 tools/gpu-tests $OUT/tests 8 > $OUT/tests-gpu-$commit.txt 2>&1
tail -n 20 $OUT/tests-gpu-$commit.txt
rm -rf $OUT/tests
timeout 180 tools/gpu-bench $OUT $commit normalization
timeout 40 python3 -m layoutfuse.bench.profile normalization --filter longrow 2>&1 \
  | grep -v "^\[\|UserWarning\|_warn_once\|^  \|^$\|warnings.warn" | tee $OUT/profile-longrow-$commit.txt
