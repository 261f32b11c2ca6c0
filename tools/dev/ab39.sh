#!/usr/bin/env bash
# Pointwise full blocks only where an access could move vectors along X (``_vector_rows``,
# 3c34752): the rule's plan (one body) against pointwise.unaligned_full_blocks=1 (the
# earlier two bodies) on random cases whose plan it changes, each kernel's time and
# registers. Not run in session 24 (no device time left). Carry .wheels (unused). About
# 60 s plus the start.
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
LAYOUTFUSE_MEASURE=0 timeout 150 python3 -m benchmarks tune r3_100 r1_068 r1_119 r2_038 r1_083 r1_062 r1_005 \
  --profile --tuning "" --tuning pointwise.unaligned_full_blocks=1 2>&1 | grep -v "Warn\|warn" > $out/tune-ab39-$day-$commit-$gpu.txt
echo "tune rc=$? $(( $(date +%s) - t0 )) s"; cut -c1-250 $out/tune-ab39-$day-$commit-$gpu.txt
