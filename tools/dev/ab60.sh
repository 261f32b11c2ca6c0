#!/usr/bin/env bash
# The next call after session 31: the whole suite with CUDA tensors (tests now run the
# rules' plans: the measured choice off unless marked), then random seeds at the session's
# defaults (the measured choice down to a twentieth of L2), each under RANDOM_S seconds.
# Two calls fit the 600 s limit: `bash tools/dev/ab60.sh` (tests, then seed 1), then
# `TESTS_S=0 SEEDS=3 bash tools/dev/ab60.sh` (seed 3 only).
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
[ "${TESTS_S:-260}" != 0 ] && {
timeout ${TESTS_S:-260} tools/gpu-tests $out/tests 16 > $out/tests-summary.txt 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"; tail -17 $out/tests-summary.txt | cut -c1-200
cat $out/tests/tests-shard-*.log | grep -a "^FAILED\|^ERROR\|passed\|failed" > $out/tests-gpu-$day-$commit-$gpu.txt
cat $out/tests/tests-shard-*.log | grep -a "^E  " | head -30 | cut -c1-250
for f in $(grep -l "^FAILED\|^ERROR" $out/tests/tests-shard-*.log | head -3); do cp $f $out/; done
rm -rf $out/tests $out/tests-summary.txt
}
for s in ${SEEDS:-1}; do
  t0=$(date +%s)
  timeout ${RANDOM_S:-290} python3 -m benchmarks suite random --seed $s --out $out/random_seed$s-$day-$commit-$gpu.json > $out/random.txt 2>&1
  echo "random $s rc=$? $(( $(date +%s) - t0 )) s"; grep -v "Warn\|warn" $out/random.txt | tail -34 | cut -c1-220; rm -f $out/random.txt
done
