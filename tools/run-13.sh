#!/usr/bin/env bash
# GPU run 13 (session 5): the store pass walking back (STORE_WALK_BACK) and larger outer
# looped tiles on the strided normalization cases, layoutfuse alone, same process; then the
# whole reduction suite with its peers, at COMMIT (2-byte split outer sums: 256-byte rows).
export PYTHONPATH=$PWD/src
commit=${1:?commit}
mkdir -p /tmp/tc
for f in reduce_outer reduce_middle; do
  python3 -m layoutfuse.bench.tune_constants normalization layoutfuse.schedulers.normalization \
    "" STORE_WALK_BACK=0 LOOP_OUTER_TILE=8192 LOOP_OUTER_TILE=16384,LOOP_OUTER_WARPS=16 \
    --filter $f --out /tmp/tc 2>&1 | grep -v "^\[" | grep -v "^  " | tail -n 14
done | tee $OUT/tune-normalization-storeback-$commit.txt
timeout 400 tools/gpu-bench $OUT $commit reduction
