#!/usr/bin/env bash
# GPU probe 7 (session 4): the lagged cooperative softmax (bench.probe_outer lag: partials of
# block t, then the store pass of block t - LAG re-read from L2) on the issue-5 strided
# shapes; then the whole reduction suite (read flush) with the 2-byte outer split of one wave.
export PYTHONPATH=$PWD/src
commit=${1:?commit}
P="python3 -m layoutfuse.bench.probe_outer lag"
{
$P --dtype float32 --shape 1,8192,8192 --tile 128x32,64x64 --split 16,32 --lag 1,2 --warps 8 --per-sm 2,4
$P --dtype bfloat16 --shape 1,8192,8192 --tile 128x64,64x64 --split 16,32 --lag 1 --warps 8 --per-sm 2,4
$P --dtype float32 --shape 32,4096,4096 --tile 128x32,64x64 --split 8,16 --lag 1 --warps 8 --per-sm 2,4
$P --dtype bfloat16 --shape 32,4096,4096 --tile 128x64 --split 8,16 --lag 1 --warps 8 --per-sm 2,4
} 2>&1 | grep -v "^\[" | tee $OUT/probe-lag-$commit.txt
timeout 330 tools/gpu-bench $OUT $commit reduction
