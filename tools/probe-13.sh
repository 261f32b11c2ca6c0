#!/usr/bin/env bash
# GPU probe 13 (prepared in session 4, not yet run): the cooperative softmax with few
# programs per column block and 128-byte rows (session 3's persistent probe read once yet
# ran at 63% with 32-byte rows), at one 512-thread program per SM: configs that ptxas
# (sm_90) compiles without spills: fp32 [512, 32] x 16 warps 111 registers; bf16 [1024, 32]
# x 16 warps 128, [512, 32] 106.
export PYTHONPATH=$PWD/src
commit=${1:?commit}
P="python3 -m layoutfuse.bench.probe_outer coop"
{
$P --dtype float32 --shape 32,4096,4096 --tile 32 --split 8 --warps 16
$P --dtype float32 --shape 1,8192,8192 --tile 32 --split 16 --warps 16
$P --dtype bfloat16 --shape 32,4096,4096 --tile 32 --split 4,8 --warps 16
$P --dtype bfloat16 --shape 1,8192,8192 --tile 32 --split 8,16 --warps 16
} 2>&1 | grep -v "^\[" | tee $OUT/probe-coop-narrow-$commit.txt
