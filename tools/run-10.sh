#!/usr/bin/env bash
# GPU run 10 (session 4): sibling reductions sized by their accumulators (the var_sums
# cases over strided columns), the bf16 reductions once more (run-to-run spread), and the
# reduction, sibling and normalization tests with CUDA tensors; at COMMIT.
export PYTHONPATH=$PWD/src
commit=${1:?commit}
tools/gpu-bench $OUT $commit normalization:varsums reduction:bf16
files="tests/schedulers/test_sibling_reductions.py tests/schedulers/test_reduction_split.py tests/schedulers/test_reduction_tiles.py tests/schedulers/test_normalization.py tests/codegen/test_normalization_online.py"
for i in 0 1 2 3 4 5 6 7; do
  python3 -m pytest -q -p no:cacheprovider --device cuda --shard $i/8 $files > /tmp/n-$i.log 2>&1 &
done
wait
cat /tmp/n-*.log > $OUT/tests-gpu-reduction-normalization-$commit.txt
for i in 0 1 2 3 4 5 6 7; do tail -n 1 /tmp/n-$i.log; done
grep -h "^FAILED" /tmp/n-*.log | head
