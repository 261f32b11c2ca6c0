#!/usr/bin/env bash
# Session 31: random seed 2 with the measured choice timing problems down to MIN_L2 times
# the L2 (suite --tuning measure.min_l2=...), then params variants of three small losers
# of seed 2 at 1ce8abf (r2_106 a mixed fp16 sum, r2_008 an outer fp32 var_mean over 32
# rows, r2_018 a mixed fp16 RMS norm over 8 rows), the measured choice off.
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
timeout ${RANDOM_S:-260} python3 -m benchmarks suite random --seed ${SEED:-2} --tuning measure.min_l2=${MIN_L2:-0.05} --out $out/random_seed${SEED:-2}-min_l2_${MIN_L2:-0.05}-$day-$commit-$gpu.json > $out/random.txt 2>&1
echo "random rc=$? $(( $(date +%s) - t0 )) s"; grep -v "Warn\|warn" $out/random.txt | tail -36 | cut -c1-220; rm -f $out/random.txt
TUNE_LOG=tune-ab57
run_tune r2_106_sum_float16_30x64x112x112_mem0123_d2_tomem102_s2.1.1 --variant= --variant unroll=1 --variant block_r=16 --variant block_r=64,unroll=1 --variant num_warps=8 --variant block_x=64 --variant block_r=16,num_warps=2 --variant block_r=128,unroll=1,num_warps=8
run_tune r2_008_var_mean_float32_32x32x2x2888_mem0231_d0 --variant= --variant num_warps=4 --variant block_x=64,num_warps=4 --variant block_x=256 --variant block_x=32,num_warps=2 --variant block_x=64,num_warps=8 --variant block_x=256,num_warps=16
run_tune r2_018_rmsnorm_float16_8x55x8192_mem201_d0 --variant= --variant block_x=64 --variant block_x=64,num_warps=2 --variant block_x=16 --variant block_x=32,num_warps=2 --variant block_x=64,num_warps=4
