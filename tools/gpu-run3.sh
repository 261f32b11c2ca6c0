#!/usr/bin/env bash
# GPU session 9, call 3 (little device time left): topk's new select mode in the ops suite
# (layoutfuse and eager), and A/Bs of the two-group outer normalization tile and the short
# outer columns rule on the random cases they change.
set -u
out=${OUT:?}; commit=${COMMIT:?}; day=$(date -u +%Y%m%d)
export PYTHONPATH=$PWD/src:$PWD LAYOUTFUSE_BENCH_COMMIT=$commit
timeout 75 python3 -m benchmarks ops --filter topk --systems layoutfuse,eager --out $out/ops_topk-$day-$commit-h200.json > $out/ops.txt 2>&1
echo "ops rc=$?"; grep -v "^\[" $out/ops.txt | tail -12; grep "^\[" $out/ops.txt | tail -8
timeout 45 python3 -m benchmarks tune r1_103_log_softmax_float32_2x3x50257_mem201_d0 r1_014_rmsnorm_float32_113x3x112x112_mem2301_d0 --variant "" --variant x_span=1,block_x=4 > $out/tune-span.txt 2>&1
echo "span rc=$?"; grep "GB/s\|failed" $out/tune-span.txt | sed 's/ regs=.*//'
timeout 40 python3 -m benchmarks tune r1_059_layernorm_float32_1x694173x61_mem201_d2_s2.2.1 r2_092_log_softmax_float32_399550x127_mem10_d1 --tuning "" --tuning normalization.short_column_tile=0 > $out/tune-cols.txt 2>&1
echo "cols rc=$?"; grep "GB/s\|failed" $out/tune-cols.txt | sed 's/ regs=.*//'
