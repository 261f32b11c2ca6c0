#!/usr/bin/env bash
# GPU probe 5 (session 4): (1) L2 flush by a read vs do_bench's zeroing on the best outer
# sum tiles; (2) the cooperative column-split softmax (bench.probe_outer coop) on the
# issue-5 strided shapes; (3) the bf16 reductions and the normalization suite with the read
# flush; (4) the sibling-reduction tests with CUDA tensors, --full.
export PYTHONPATH=$PWD/src
commit=${1:?commit}
P="python3 -m layoutfuse.bench.probe_outer"
{
$P sum --dtype bfloat16 --shape 256,524288 --tile 8x512 --warps 4
$P sum --dtype float32 --shape 256,524288 --tile 8x256 --warps 8
for dt in float32 bfloat16; do
  $P coop --dtype $dt --shape 1,8192,8192 --tile 64 --split 64 --warps 8,4
  $P coop --dtype $dt --shape 1,8192,8192 --tile 64 --split 32 --warps 16,8
  $P coop --dtype $dt --shape 1,8192,8192 --tile 32 --split 32,64 --warps 8,4
  $P coop --dtype $dt --shape 1,8192,8192 --tile 128 --split 64,128 --warps 16,8
  $P coop --dtype $dt --shape 32,4096,4096 --tile 64 --split 32,64 --warps 8,4
done
} 2>&1 | grep -v "^\[" | tee $OUT/probe-coop-$commit.txt
timeout 200 tools/gpu-bench $OUT $commit reduction:bf16 normalization
python3 -m pytest -q -p no:cacheprovider --device cuda --full tests/schedulers/test_sibling_reductions.py -x 2>&1 | tail -5 | tee $OUT/tests-gpu-siblings-$commit.txt
