#!/usr/bin/env bash
# GPU session 9, call 1: A/B of the pointwise short-edge rules on every case they change,
# tune variants of the worst random-suite cases, then the random suite seed 1.
set -u
export PYTHONPATH=$PWD/src:$PWD LAYOUTFUSE_BENCH_COMMIT=${COMMIT:?}
out=${OUT:?}
CHANGED="$(cat tools/gpu-run1.cases)"
FIXED="permute_4d_mem0231_to_mem3210_bfloat16 permute_4d_mem0321_to_mem3210_bfloat16 permute_4d_mem1230_to_mem0123_bfloat16 permute_4d_mem2031_to_mem3210_bfloat16 permute_4d_mem2130_to_mem0123_bfloat16 permute_4d_mem3021_to_mem3210_bfloat16"
PW=$(for c in $CHANGED; do case $c in *chain*|*copy*|*add*) echo $c;; esac; done)
timeout 200 python3 -m benchmarks tune $FIXED $PW --tuning "" --tuning pointwise.short_edge_bytes=0 --out $out/tune-pointwise-short-edges.json > $out/tune-pw.txt 2>&1
echo "tune-pw rc=$?"; tail -60 $out/tune-pw.txt
timeout 120 python3 -m benchmarks tune r1_077_var_mean_float32_23235x3x7x7_mem2301_d3_tomem012 --variant block_x=16,block_r=8,num_warps=1 --variant block_x=64,block_r=8,num_warps=2 --variant block_x=256,block_r=8,num_warps=4 --variant block_x=512,block_r=8,num_warps=8 > $out/tune-norm.txt 2>&1
echo "tune-norm rc=$?"; tail -12 $out/tune-norm.txt
timeout 120 python3 -m benchmarks tune r1_007_max_float32_13x1021x158_mem210_d012_s1.1.2 r1_013_max_bfloat16_469x65521x25_mem102_d01_s0.0.2 r1_012_sum_float16_1x91464418x7x1_mem2310_d0 > $out/tune-red.txt 2>&1
echo "tune-red rc=$?"; tail -40 $out/tune-red.txt
day=$(date -u +%Y%m%d)
timeout 250 python3 -m benchmarks suite random --seed 1 --cases 120 --out $out/random_seed1-$day-$COMMIT-h200.json > $out/random1.txt 2>&1
echo "random rc=$?"; grep -v "^\[" $out/random1.txt | tail -45
