#!/usr/bin/env bash
# GPU probe 18 (session 6): strided rows read once in a persistent tile of narrow rows
# (16- and 8-byte rows of the stride-1 kept group, whole columns of 4096-8192 in registers)
# against the two-walk looped kernel, layoutfuse alone in one process per filter.
export PYTHONPATH=$PWD/src
commit=${1:?commit}
for f in colmajor_reduce middle; do
  timeout 280 python3 -m layoutfuse.bench.tune_constants normalization layoutfuse.schedulers.normalization \
    "" MIN_ROW_BYTES=16 MIN_ROW_BYTES=16,THREAD_BYTES=256 MIN_ROW_BYTES=8 \
    MIN_ROW_BYTES=16,MAX_TILE=65536,MAX_WARPS=32 --filter $f --out /tmp 2>&1 \
    | grep -v "^\[\|UserWarning\|_warn_once\|^  \|^$\|warnings.warn\|Online softmax\|split the reduction\|important use"
done | tee $OUT/tune-normalization-narrow-$commit.txt
