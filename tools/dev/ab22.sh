#!/usr/bin/env bash
# Session 20's third device call: each kernel's device time of seed 1's small cases behind
# torch.compile (and two large ones), with torch.compile's generated code (TORCH_LOGS
# output_code, for reading its tiles here); then random seeds 2 and 3. Carry .wheels.
set -u
out=${OUT:?}; commit=${COMMIT:?}; day=$(date -u +%Y%m%d)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && echo h200 || echo h100)
export PYTHONPATH=$PWD/src:$PWD LAYOUTFUSE_CACHE_DIR=/tmp/lfcache PYTHONUNBUFFERED=1
t0=$(date +%s)
TORCH_LOGS=output_code timeout ${PEER_S:-120} python3 tools/dev/peer_kernels.py \
  ${CASES:-r1_077 r1_030 r1_110 r1_114 r1_070 r1_054 r1_076 r1_086 r1_040 r1_085 r1_002 r1_118 r1_059} \
  > $out/peer-kernels-$day-$commit-$gpu.txt 2> $out/inductor-code-$day-$commit-$gpu.txt
echo "peer rc=$? $(( $(date +%s) - t0 )) s"
grep -v "Warn\|warn" $out/peer-kernels-$day-$commit-$gpu.txt | cut -c1-250
gzip $out/inductor-code-$day-$commit-$gpu.txt
PART=f OUT=$out COMMIT=$commit SEEDS="${SEEDS:-2 3}" RANDOM_S=${RANDOM_S:-230} THUNDER_FILTERS=none bash tools/gpu-run.sh
