#!/usr/bin/env bash
# GPU probe 21 (session 6): softmax's max over a tile as one tree of NaN-propagating maxima
# (NAN_BY_COMBINE=1: one block reduction) against a max plus a NaN flag (two); 256-byte
# rows for the outer looped kernel (LOOP_ROW_BYTES=256; probes 19-20).
export PYTHONPATH=$PWD/src
commit=${1:?commit}
q() { grep -v "^\[\|UserWarning\|_warn_once\|^  \|^$\|warnings.warn\|Online softmax\|split the reduction\|important use"; }
{
timeout 200 python3 -m layoutfuse.bench.tune_constants normalization layoutfuse.codegen.reduction_common \
  "" NAN_BY_COMBINE=1 --filter softmax --out /tmp 2>&1 | q
timeout 150 python3 -m layoutfuse.bench.tune_constants normalization layoutfuse.schedulers.normalization \
  "" LOOP_ROW_BYTES=256 --filter middle --out /tmp 2>&1 | q
} | tee $OUT/tune-normalization-nanmax-$commit.txt
