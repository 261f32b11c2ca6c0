#!/usr/bin/env bash
# Session 33, the second call: the changed areas' tests with CUDA tensors, then random
# seeds 1 and 3 (r1_077's row-at-a-time transposed tile, now a measured candidate; r3_021
# in its seed), each under a time limit.
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
timeout 70 python3 -m pytest -q -p no:cacheprovider --device cuda tests/segmenter/test_segment_regressions.py \
  tests/schedulers/test_reduction_transposed.py tests/schedulers/test_measure_candidates.py 2>&1 | tail -3
echo "tests rc=$? $(( $(date +%s) - t0 )) s"
for s in ${SEEDS:-1 3}; do
  t0=$(date +%s)
  timeout ${RANDOM_S:-245} python3 -m benchmarks suite random --seed $s --out $out/random_seed$s-$day-$commit-$gpu.json > $out/random.txt 2>&1
  echo "random $s rc=$? $(( $(date +%s) - t0 )) s"; grep -v "Warn\|warn" $out/random.txt | tail -30 | cut -c1-220; rm -f $out/random.txt
done
