#!/usr/bin/env bash
# Session 31: random seed 2 with the measured choice timing problems down to MIN_L2 times
# the L2 (suite --tuning measure.min_l2=...), then params variants of three more small
# losers of seed 2 at 1ce8abf (r2_016 an inner fp32 RMS norm over rows of 112, r2_071 an
# fp16 transposing add of [244, 3072], r2_065 an outer fp32 max over 184 rows), the
# measured choice off.
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
timeout ${RANDOM_S:-260} python3 -m benchmarks suite random --seed ${SEED:-2} --tuning measure.min_l2=${MIN_L2:-0.05} --out $out/random_seed${SEED:-2}-min_l2_${MIN_L2:-0.05}-$day-$commit-$gpu.json > $out/random.txt 2>&1
echo "random rc=$? $(( $(date +%s) - t0 )) s"; grep -v "Warn\|warn" $out/random.txt | tail -36 | cut -c1-220; rm -f $out/random.txt
TUNE_LOG=tune-ab58
run_tune r2_016_rmsnorm_float32_1x64x112x112_mem1203_d3 --variant= --variant block_x=8,num_warps=2 --variant block_x=8,num_warps=4 --variant block_x=4,num_warps=1 --variant block_x=4,num_warps=2 --variant block_x=32,num_warps=8 --variant block_x=16,num_warps=8
run_tune r2_071_add_float16_244x3072_mem10_tomem01_s0.1.1 --variant= --variant block_x=32,block_y=32,num_warps=2 --variant block_x=64,block_y=64,num_warps=8 --variant block_x=32,block_y=64,num_warps=4 --variant block_x=128,block_y=32,num_warps=4 --variant block_x=64,block_y=32,num_warps=2
run_tune r2_065_max_float32_1x184x50257_mem012_d1 --variant= --variant split=1 --variant split=3 --variant split=12 --variant block_x=128 --variant num_warps=4 --variant block_r=32
