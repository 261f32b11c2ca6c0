#!/usr/bin/env bash
# GPU run 12 (session 4): outer sibling reductions split to one wave (var_sums column-major:
# the heuristics' choice and fewer splits), the reduction and sibling tests with CUDA
# tensors, the var_sums cases of the normalization suite; at COMMIT.
export PYTHONPATH=$PWD/src
commit=${1:?commit}
python3 -m layoutfuse.bench.tune norm_varsums_colmajor_reduce_outer_float32 --variant '' --variant split=8 \
  --variant split=4 --variant split=16,finish=kernel --variant split=8,finish=kernel 2>&1 | grep -v "^\[" \
  | tee $OUT/tune-varsums-onewave-$commit.txt
files="tests/schedulers/test_sibling_reductions.py tests/schedulers/test_reduction_split.py tests/schedulers/test_reduction_tiles.py"
for i in 0 1 2 3 4 5 6 7; do
  python3 -m pytest -q -p no:cacheprovider --device cuda --shard $i/8 $files > /tmp/n-$i.log 2>&1 &
done
wait
cat /tmp/n-*.log > $OUT/tests-gpu-siblings-$commit.txt
for i in 0 1 2 3 4 5 6 7; do tail -n 1 /tmp/n-$i.log; done
grep -h "^FAILED" /tmp/n-*.log | head
timeout 70 tools/gpu-bench $OUT $commit normalization:varsums
