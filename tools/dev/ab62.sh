#!/usr/bin/env bash
# Session 32, the third call: r3_021 (a fp16 max of [2016, 1024] over both dims) ran 52.9 us
# in seed 3 at d261dbc after its measured choice timed the winner at 7 us (the rule's plan
# 10 us at fffb7ba): the case alone in the suite with the measured choice on and off, then
# taken apart (tools/dev/replay_probe.py); then the take_along_axis tests with CUDA tensors.
. "$(dirname "$0")/device_env.sh"
for m in 1 0; do
  t0=$(date +%s)
  LAYOUTFUSE_MEASURE=$m timeout 60 python3 -m benchmarks suite random --seed 3 --filter r3_021 --out $out/random_seed3-r3_021-measure$m-$day-$commit-$gpu.json 2>&1 | grep "^\[" | cut -c1-250
  echo "suite r3_021 measure=$m rc=$? $(( $(date +%s) - t0 )) s"
done
rm -rf /tmp/lfcache
t0=$(date +%s)
timeout 90 python3 tools/dev/replay_probe.py r3_021_max_float16_2016x1024_mem01_d01 r1_077_var_mean_float32_23235x3x7x7_mem2301_d3_tomem012 2>&1 | grep -v "Warn\|warn" | tee $out/replay-probe-$day-$commit-$gpu.txt | cut -c1-300
echo "replay probe rc=$? $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
timeout 120 python3 -m pytest -q -x -p no:cacheprovider tests/ir/test_indexing_ops.py --device cuda -k "take_along" 2>&1 | tail -3
echo "tests rc=$? $(( $(date +%s) - t0 )) s"
