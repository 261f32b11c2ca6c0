#!/usr/bin/env bash
# GPU probe 17 (session 5): each kernel's device time for the normalization cases below 80%
# (long rows: segmented plans; strided columns: one looped kernel).
export PYTHONPATH=$PWD/src
commit=${1:?commit}
{
python3 -m layoutfuse.bench.profile normalization --filter longrow
python3 -m layoutfuse.bench.profile normalization --filter colmajor
python3 -m layoutfuse.bench.profile normalization --filter middle
} 2>&1 | grep -v "^\[\|UserWarning\|_warn_once\|^  \|^$\|warnings.warn\|Online softmax\|split the reduction\|important use" \
  | tee $OUT/profile-normalization-$commit.txt
