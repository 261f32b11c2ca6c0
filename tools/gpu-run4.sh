#!/usr/bin/env bash
# GPU session 10, call 1: the random suite, seeds 1 and 2 (measured choice on: each
# layoutfuse row's "measured" holds the candidates' times, the rule's plan first).
set -u
out=${OUT:?}; commit=${COMMIT:?}; day=$(date -u +%Y%m%d)
export PYTHONPATH=$PWD/src:$PWD LAYOUTFUSE_BENCH_COMMIT=$commit LAYOUTFUSE_CACHE_DIR=$out/cache
for seed in ${SEEDS:-1 2}; do
  t0=$(date +%s)
  timeout ${LIMIT:-285} python3 -m benchmarks suite random --seed $seed --cases 120 \
    --out $out/random_seed$seed-$day-$commit-h200.json > $out/random$seed.txt 2>&1
  echo "seed $seed rc=$? $(( $(date +%s) - t0 )) s"; grep -v "^\[" $out/random$seed.txt | tail -42
done
rm -rf $out/cache
