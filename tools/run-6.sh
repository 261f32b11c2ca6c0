#!/usr/bin/env bash
# GPU run 6 (session 3): the normalization suite at COMMIT, and its tests with CUDA tensors.
export PYTHONPATH=$PWD/src
commit=${1:?commit}
tools/gpu-bench $OUT $commit normalization
files="tests/schedulers/test_sibling_reductions.py tests/schedulers/test_normalization.py tests/codegen/test_normalization_online.py tests/frontend/test_segment.py"
for i in 0 1 2 3 4 5 6 7; do
  python3 -m pytest -q -p no:cacheprovider --device cuda --shard $i/8 $files > /tmp/n-$i.log 2>&1 &
done
wait
cat /tmp/n-*.log > $OUT/tests-gpu-normalization-$commit.txt
for i in 0 1 2 3 4 5 6 7; do tail -n 1 /tmp/n-$i.log; done
grep -h "^FAILED" /tmp/n-*.log | head
