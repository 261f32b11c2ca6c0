#!/usr/bin/env bash
# Session 24's third device call: (1) pointwise.whole_y_to_x on (1) and off (0) on the
# cases whose plan it changes (tools/dev/diffplans.py: three random cases; the pointwise
# suite's two bf16 [32, 64, 256, 256] permutes to mem3210), each kernel's time; (2) the
# small 2-D transposes behind torch.compile in the random seeds (5-25 us, under the L2:
# not measured) under the rule and under the measured choice at any size
# (measure.min_l2=0); (3) the whole suite with CUDA tensors (16 shards). Carry .wheels.
# About 400 s.
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
LAYOUTFUSE_MEASURE=0 timeout 60 python3 -m benchmarks tune r1_054 r2_013 r3_104 permute_4d_mem0231_to_mem3210_bfloat16 \
  permute_4d_mem2031_to_mem3210_bfloat16 --profile --tuning "" --tuning pointwise.whole_y_to_x=0 2>&1 \
  | grep -v "Warn\|warn" > $out/tune-ab38-$day-$commit-$gpu.txt
echo "tune rc=$? $(( $(date +%s) - t0 )) s"; cut -c1-250 $out/tune-ab38-$day-$commit-$gpu.txt
t0=$(date +%s)
timeout 90 python3 -m benchmarks tune r3_100 r1_055 r3_091 r3_066 r1_020 r2_026 r2_052 --profile --tuning "" \
  --tuning measure.min_l2=0 2>&1 | grep -v "Warn\|warn" > $out/tune-ab38-small-$day-$commit-$gpu.txt
echo "tune small rc=$? $(( $(date +%s) - t0 )) s"; cut -c1-250 $out/tune-ab38-small-$day-$commit-$gpu.txt
rm -rf /tmp/lfcache
PART=c OUT=$out COMMIT=$commit LIMIT=${TESTS_S:-280} bash tools/gpu-run.sh
