#!/usr/bin/env bash
# GPU run 18 (session 5, the last minutes): softmax's online max+sum kernel on the long
# rows (each kernel's time), and its tests with CUDA tensors, at COMMIT.
export PYTHONPATH=$PWD/src
commit=${1:?commit}
timeout 45 python3 -m layoutfuse.bench.profile normalization --filter longrow 2>&1 \
  | grep -v "^\[\|UserWarning\|_warn_once\|^  \|^$\|warnings.warn" | tee $OUT/profile-longrow-$commit.txt
timeout 100 python3 -m pytest -q -p no:cacheprovider --device cuda -x \
  tests/schedulers/test_online_softmax_split.py tests/schedulers/test_normalization.py 2>&1 \
  | tail -n 5 | tee $OUT/tests-gpu-online-$commit.txt
