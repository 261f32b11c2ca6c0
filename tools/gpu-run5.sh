#!/usr/bin/env bash
# GPU session 11, call 1: tile variants on the random suite's losing classes (flat
# pointwise chains at 91% of the copy ceiling; mixed reductions whose nested tile was
# 64 elements; an outer bf16 sum of 2-element rows, now stacked), then seed 1.
set -u
out=${OUT:?}; commit=${COMMIT:?}; day=$(date -u +%Y%m%d)
export PYTHONPATH=$PWD/src:$PWD LAYOUTFUSE_BENCH_COMMIT=$commit LAYOUTFUSE_CACHE_DIR=$out/cache
t0=$(date +%s)
timeout 150 python3 -m benchmarks tune r3_107 r2_117 r3_072 r1_113 r2_024 r3_031 r1_001 r1_060 r2_062 \
  --variant "" --variant block_x=1024,num_warps=4 --variant block_x=2048,num_warps=4 \
  --variant block_x=2048,num_warps=8 --variant block_x=4096,num_warps=4 --variant block_x=8192,num_warps=8 \
  --out $out/tune-flat-$day-$commit-h200.json > $out/tune-flat.txt 2>&1
echo "flat rc=$? $(( $(date +%s) - t0 )) s"; grep -v "^\[" $out/tune-flat.txt | tail -70
t0=$(date +%s)
timeout 45 python3 -m benchmarks tune r3_079 \
  --variant "" --variant block_y=32,block_r=64 --variant block_y=128,block_r=16 --variant block_y=256,block_r=8 \
  --out $out/tune-short-rows-$day-$commit-h200.json > $out/tune-short.txt 2>&1
echo "short rc=$? $(( $(date +%s) - t0 )) s"; grep -v "^\[" $out/tune-short.txt | tail -12
for seed in ${SEEDS:-1}; do
  t0=$(date +%s)
  timeout ${LIMIT:-300} python3 -m benchmarks suite random --seed $seed --cases 120 \
    --out $out/random_seed$seed-$day-$commit-h200.json > $out/random$seed.txt 2>&1
  echo "seed $seed rc=$? $(( $(date +%s) - t0 )) s"; grep -v "^\[" $out/random$seed.txt | tail -42
done
rm -rf $out/cache
