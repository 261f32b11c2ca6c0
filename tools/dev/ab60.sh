#!/usr/bin/env bash
# The next call after session 31: the whole suite with CUDA tensors (tests now run the
# rules' plans: the measured choice off unless marked), then random seeds at the session's
# defaults (the measured choice down to a twentieth of L2), each under RANDOM_S seconds.
# Two calls fit the 600 s limit: `bash tools/dev/ab60.sh` (tests, then seed 1), then
# `TESTS_S=0 SEEDS=3 bash tools/dev/ab60.sh` (seed 3 only).
. "$(dirname "$0")/device_env.sh"
[ "${TESTS_S:-260}" != 0 ] && PART=c OUT=$out COMMIT=$commit LIMIT=${TESTS_S:-260} bash tools/gpu-run.sh
for s in ${SEEDS:-1}; do
  t0=$(date +%s)
  timeout ${RANDOM_S:-290} python3 -m benchmarks suite random --seed $s --out $out/random_seed$s-$day-$commit-$gpu.json > $out/random.txt 2>&1
  echo "random $s rc=$? $(( $(date +%s) - t0 )) s"; grep -v "Warn\|warn" $out/random.txt | tail -34 | cut -c1-220; rm -f $out/random.txt
done
