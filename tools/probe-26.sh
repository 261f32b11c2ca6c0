#!/usr/bin/env bash
# GPU probe 26 (session 6): two fp32 sums over the column-major [8192, 8192] with the
# heuristics' new tile ([4, 256] x 4, split 20) against the same tile at split 16 (probe
# 25: 78.5%) and the old [16, 256] tile at split 16; each kernel's time.
export PYTHONPATH=$PWD/src
commit=${1:?commit}
timeout 200 python3 -m layoutfuse.bench.tune --profile norm_varsums_colmajor_reduce_outer_float32 \
  --variant "" --variant split=16 --variant block_r=16,unroll=1,split=16 --variant "" 2>&1 \
  | grep -v "^\[\|UserWarning\|_warn_once\|^  \|^$\|warnings.warn" | tee $OUT/tune-varsums-unroll-$commit.txt
