#!/usr/bin/env bash
# GPU session 9, call 3 (little device time left), most wanted first: A/B of the inner
# looped L2 warps rule on wide rows, topk's select mode (ops suite, layoutfuse and eager),
# the two-group outer tile, tile variants of misaligned bf16 transposes, short columns.
set -u
out=${OUT:?}; commit=${COMMIT:?}; day=$(date -u +%Y%m%d)
export PYTHONPATH=$PWD/src:$PWD LAYOUTFUSE_BENCH_COMMIT=$commit
t() { grep "GB/s\|failed" "$1" | sed 's/ regs=[^ ]*//; s/spills=[^ ]*//'; }
timeout 60 python3 -m benchmarks tune r1_084_rmsnorm_bfloat16_65954x2560_mem10_d0 r1_095_rmsnorm_bfloat16_786x50257_mem01_d1 r2_001_layernorm_bfloat16_3274x50257_mem10_d0 r1_058_softmax_bfloat16_17347x32000_mem01_d1 r3_110_softmax_bfloat16_9747x50257_mem10_d0 --tuning "" --tuning normalization.loop_l2_warps=32 > $out/tune-l2warps.txt 2>&1
echo "l2warps rc=$?"; t $out/tune-l2warps.txt
timeout 60 python3 -m benchmarks ops --filter topk --systems layoutfuse,eager --out $out/ops_topk-$day-$commit-h200.json > $out/ops.txt 2>&1
echo "ops rc=$?"; grep "^\[" $out/ops.txt | tail -8
timeout 30 python3 -m benchmarks tune r1_103_log_softmax_float32_2x3x50257_mem201_d0 r1_014_rmsnorm_float32_113x3x112x112_mem2301_d0 --variant "" --variant x_span=1,block_x=4 > $out/tune-span.txt 2>&1
echo "span rc=$?"; t $out/tune-span.txt
timeout 40 python3 -m benchmarks tune r1_005_chain_bfloat16_119111x6144_mem10_tomem01 r1_119_copy_float16_8x211x50257_mem012_tomem210_s1.1.1 --variant "" --variant block_x=64,block_y=64,num_warps=4 --variant block_x=64,block_y=64,num_warps=8 --variant block_x=32,block_y=32,num_warps=4 --variant block_x=128,block_y=64,num_warps=8 > $out/tune-tr.txt 2>&1
echo "tr rc=$?"; t $out/tune-tr.txt
timeout 30 python3 -m benchmarks tune r1_059_layernorm_float32_1x694173x61_mem201_d2_s2.2.1 r2_092_log_softmax_float32_399550x127_mem10_d1 --tuning "" --tuning normalization.short_column_tile=0 > $out/tune-cols.txt 2>&1
echo "cols rc=$?"; t $out/tune-cols.txt
