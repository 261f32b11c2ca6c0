#!/usr/bin/env bash
# Not run in session 24 (no device time left). Two A/Bs of rules landed then, each
# kernel's time and registers, eager and torch.compile not needed (the random suite's
# runs have them): (1) pointwise full blocks only where an access could move vectors
# along X (``_vector_rows``, 3c34752): the rule's plan (one body) against
# pointwise.unaligned_full_blocks=1 (the earlier two bodies) on random cases whose plan
# it changes; (2) pointwise.continuation_to_store (off) on the two random cases it
# changes (r2_000, r1_087: Inductor's kind of tile, the shared continuation flattened on
# the store's side), at its tile and at wider Y; (3) reduction.scalar_outer_item=4 (off)
# on the ten random cases it changes (outer tiles whose loads cannot be 16-byte vectors,
# sized as for 4-byte elements: 250 -> 64 registers a thread for r1_013 on sm_90).
# Carry .wheels (unused). About 150 s plus the start.
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
LAYOUTFUSE_MEASURE=0 timeout 150 python3 -m benchmarks tune r3_100 r1_068 r1_119 r2_038 r1_083 r1_062 r1_005 \
  --profile --tuning "" --tuning pointwise.unaligned_full_blocks=1 2>&1 | grep -v "Warn\|warn" > $out/tune-ab39-$day-$commit-$gpu.txt
echo "tune rc=$? $(( $(date +%s) - t0 )) s"; cut -c1-250 $out/tune-ab39-$day-$commit-$gpu.txt
t0=$(date +%s)
LAYOUTFUSE_MEASURE=0 timeout 60 python3 -m benchmarks tune r2_000 r1_087 --profile --tuning "" 2>&1 \
  | grep -v "Warn\|warn" >> $out/tune-ab39-$day-$commit-$gpu.txt
LAYOUTFUSE_MEASURE=0 timeout 90 python3 -m benchmarks tune r2_000 r1_087 --profile --tuning pointwise.continuation_to_store=1 \
  --variant "" --variant block_y=128 --variant block_y=256 --variant block_y=256,num_warps=8 --variant block_y=512,num_warps=8 \
  2>&1 | grep -v "Warn\|warn" >> $out/tune-ab39-$day-$commit-$gpu.txt
echo "tune continuation rc=$? $(( $(date +%s) - t0 )) s"; tail -12 $out/tune-ab39-$day-$commit-$gpu.txt | cut -c1-250
t0=$(date +%s)
LAYOUTFUSE_MEASURE=0 timeout 200 python3 -m benchmarks tune r1_013 r1_021 r1_081 r2_004 r2_104 r3_012 r3_016 r3_032 r3_073 r3_112 \
  --profile --tuning "" --tuning reduction.scalar_outer_item=4 2>&1 | grep -v "Warn\|warn" >> $out/tune-ab39-$day-$commit-$gpu.txt
echo "tune scalar_outer_item rc=$? $(( $(date +%s) - t0 )) s"; tail -20 $out/tune-ab39-$day-$commit-$gpu.txt | cut -c1-250
