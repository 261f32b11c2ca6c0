#!/usr/bin/env bash
# Session 21's first device call: torch's attention backends on nanoGPT shapes
# (tools/dev/sdpa_probe.py), the nanoGPT bf16 layer norm tiles (tools/dev/ln_tiles.py via
# ab25.sh's list), then random seed 1 at COMMIT. Carry .wheels.
set -u
out=${OUT:?}; commit=${COMMIT:?}; day=$(date -u +%Y%m%d)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && echo h200 || echo h100)
export PYTHONPATH=$PWD/src:$PWD PYTHONUNBUFFERED=1
t0=$(date +%s)
timeout 60 python3 tools/dev/sdpa_probe.py 2>&1 | grep -v "Warn\|warn" > $out/sdpa-probe-$day-$commit-$gpu.txt
echo "sdpa_probe rc=$? $(( $(date +%s) - t0 )) s"; cat $out/sdpa-probe-$day-$commit-$gpu.txt
OUT=$out COMMIT=$commit LN_S=${LN_S:-150} bash tools/dev/ab25.sh
