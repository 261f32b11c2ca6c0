#!/usr/bin/env bash
# Session 24's third device call: (1) pointwise.whole_y_to_x on (1) and off (0) on the
# cases whose plan it changes (tools/dev/diffplans.py: three random cases; the pointwise
# suite's two bf16 [32, 64, 256, 256] permutes to mem3210), each kernel's time; (2) the
# whole suite with CUDA tensors (16 shards). Carry .wheels. About 330 s.
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
LAYOUTFUSE_MEASURE=0 timeout 60 python3 -m benchmarks tune r1_054 r2_013 r3_104 permute_4d_mem0231_to_mem3210_bfloat16 \
  permute_4d_mem2031_to_mem3210_bfloat16 --profile --tuning "" --tuning pointwise.whole_y_to_x=0 2>&1 \
  | grep -v "Warn\|warn" > $out/tune-ab38-$day-$commit-$gpu.txt
echo "tune rc=$? $(( $(date +%s) - t0 )) s"; cut -c1-250 $out/tune-ab38-$day-$commit-$gpu.txt
rm -rf /tmp/lfcache
PART=c OUT=$out COMMIT=$commit LIMIT=${TESTS_S:-280} bash tools/gpu-run.sh
