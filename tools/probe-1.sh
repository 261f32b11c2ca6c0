#!/usr/bin/env bash
# GPU probe run 1 (session 3): why bf16 outer reductions and strided softmax fall short.
export PYTHONPATH=$PWD/src
P="python3 -m layoutfuse.bench.probe_outer"
{
$P sum --dtype bfloat16 --shape 256,524288 --tile 8x512,16x512,16x256,32x256,32x128 --warps 4,8 --maxnreg 0,32 --split 1,2
$P sum --dtype float32 --shape 256,524288 --tile 16x256,8x256,32x128 --warps 4,8 --maxnreg 0,32 --split 1,2
$P sum --dtype bfloat16 --shape 131072,1024 --tile 8x512,16x256,32x128 --warps 8 --maxnreg 0,32 --split 256,512,1024
$P softmax --dtype float32 --shape 1,8192,8192 --mode online --tile 512x8,1024x8,256x16,128x32,64x64 --warps 8,16 --per-sm 0,1,2
$P softmax --dtype float32 --shape 32,4096,4096 --mode online --tile 512x8,1024x8,256x16,128x32 --warps 8,16 --per-sm 0,1,2
$P softmax --dtype float32 --shape 32,4096,4096 --mode persistent --tile 1x8 --warps 8,16,32 --per-sm 0,1,2
$P softmax --dtype bfloat16 --shape 1,8192,8192 --mode online --tile 512x16,1024x16,256x32,128x64 --warps 8,16 --per-sm 0,1,2
} 2>&1 | tee $OUT/probe-outer.txt | grep -v "^$" | tail -c 11000
python3 -m layoutfuse.bench.tune permute_4d_mem1230_to_mem3210_bfloat16 --variant '' --variant block_x=256,num_warps=16 --variant block_x=256,num_warps=8 --variant num_warps=4 --variant num_warps=16 --variant block_x=64,num_warps=4 2>&1 | grep -v "^\[" > $OUT/tune-pw.txt
python3 -m layoutfuse.bench.tune permute_3d_mem210_to_mem012_bfloat16 permute_3d_mem201_to_mem012_bfloat16 --variant '' --variant num_warps=8 --variant num_warps=32 --variant block_y=64,num_warps=8 --variant block_x=64,num_warps=8 2>&1 | grep -v "^\[" >> $OUT/tune-pw.txt
tail -30 $OUT/tune-pw.txt
