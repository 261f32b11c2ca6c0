#!/usr/bin/env bash
# The next session's first device call (written at the end of session 19, whose device
# time ran out): the untimed ``reduction.zero_selects`` against the select form on the
# seeds' sums whose loop loads scalars (``python -m benchmarks probe sass --seed N``:
# LDG.E or LDG.E.U16, 8 or more a step), rule plans (LAYOUTFUSE_MEASURE=0), each
# variant's values checked against the reference first; then the whole suite with CUDA
# tensors (16 shards; an H100 took 180-193 s a shard at 08cee37). Carry .wheels.
# Then, in later calls: PART=f SEEDS="1 2 3" RANDOM_S=260 (one seed a call on an H100),
# PART=b with OPS_FILTERS=all THUNDER_FILTERS=all.
set -u
out=${OUT:?}; commit=${COMMIT:?}; day=$(date -u +%Y%m%d)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && echo h200 || echo h100)
export PYTHONPATH=$PWD/src:$PWD LAYOUTFUSE_CACHE_DIR=/tmp/lfcache PYTHONUNBUFFERED=1
f=$out/tune-ab20-$day-$commit-$gpu.txt
t0=$(date +%s)
LAYOUTFUSE_MEASURE=0 timeout ${TUNE_S:-150} python3 -m benchmarks tune \
  ${CASES:-r3_015 r3_027 r1_034 r1_040 r1_105 r2_022 r2_034 r2_084 r2_104 r3_011 r3_012 r3_062 r3_079 r3_112 r1_081 r2_116} \
  --tuning= --tuning reduction.zero_selects=0 2>&1 | grep -v "Warn\|warn" > $f
echo "tune rc=$? $(( $(date +%s) - t0 )) s" >> $f
cut -c1-240 $f
PART=c OUT=$out COMMIT=$commit LIMIT=${LIMIT:-300} bash tools/gpu-run.sh
rm -f $out/tests-summary.txt
