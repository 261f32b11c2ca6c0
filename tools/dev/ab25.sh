#!/usr/bin/env bash
# The next session's first device call (written at the end of session 20, whose device
# time ran out): the nanoGPT bf16 layer norm regions under tile tunings
# (tools/dev/ln_tiles.py, with eager and torch.compile), then random seed 1 at the final
# commit (the span and misaligned-column rules were A/B'd case by case only). Later calls:
# SEEDS="2" and SEEDS="3" the same way (PART=f, RANDOM_S=230), then the ops suite and
# Thunder (PART=b). Carry .wheels.
set -u
out=${OUT:?}; commit=${COMMIT:?}; day=$(date -u +%Y%m%d)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && echo h200 || echo h100)
export PYTHONPATH=$PWD/src:$PWD LAYOUTFUSE_CACHE_DIR=/tmp/lfcache PYTHONUNBUFFERED=1
f=$out/ln-tiles-$day-$commit-$gpu.txt
t0=$(date +%s)
LAYOUTFUSE_MEASURE=0 timeout ${LN_S:-170} python3 tools/dev/ln_tiles.py 768,1024,1600 "" \
  normalization.inner_tile_bytes=8192 normalization.inner_tile_bytes=4096 \
  normalization.thread_bytes=32 normalization.inner_tile_bytes=8192,normalization.thread_bytes=32 \
  2>&1 | grep -v "Warn\|warn" > $f
echo "ln_tiles rc=$? $(( $(date +%s) - t0 )) s" >> $f
cat $f
PART=f OUT=$out COMMIT=$commit SEEDS="${SEEDS:-1}" RANDOM_S=${RANDOM_S:-230} THUNDER_FILTERS=none bash tools/gpu-run.sh
