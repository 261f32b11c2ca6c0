#!/usr/bin/env bash
# Session 22's third device call: (1) where the nanoGPT bf16 block with nvFuser's SDPA copies
# tensors (tools/dev/copy_probe.py: the ~0.038 ms of direct_copy kernels in its profile);
# (2) cumsum over a strided dim: the loop mode on narrow row tiles (scan.outer_min_bytes,
# the new default 32) against the three-launch split (outer_min_bytes=4096, the old plan),
# and the loop threshold (loop_tiles_per_sm=1), eager and torch.compile beside them.
# Carry .wheels.
set -u
out=${OUT:?}; commit=${COMMIT:?}; day=$(date -u +%Y%m%d)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && echo h200 || echo h100)
pip install -q --no-deps --target /tmp/tsite .wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=$PWD/src:$PWD:/tmp/tsite PYTHONUNBUFFERED=1 LAYOUTFUSE_CACHE_DIR=/tmp/lfcache
t0=$(date +%s)
timeout 150 python3 tools/dev/copy_probe.py nanogpt_block_sdpa 2>&1 | grep -v "Warn\|warn" > $out/copy-probe-$day-$commit-$gpu.txt
echo "copy probe rc=$? $(( $(date +%s) - t0 )) s"; cut -c1-200 $out/copy-probe-$day-$commit-$gpu.txt | head -90
t0=$(date +%s)
LAYOUTFUSE_MEASURE=0 timeout 200 python3 tools/dev/tune_ops.py $out/tune-ops-cumsum-$day-$commit-$gpu.json --peers --filter cumsum \
  scan.outer_min_bytes=32 scan.outer_min_bytes=4096 scan.loop_tiles_per_sm=1 scan.outer_min_bytes=16 2>&1 \
  | grep -v "Warn\|warn" > $out/tune-ab31-$day-$commit-$gpu.txt
echo "tune rc=$? $(( $(date +%s) - t0 )) s"; cut -c1-200 $out/tune-ab31-$day-$commit-$gpu.txt
