#!/usr/bin/env bash
# GPU probe 25 (session 6): the outer reduction table (tiles, unroll, finishing kernel) for
# two sibling sums over the column-major [8192, 8192] (var_sums: 67-69% fp32 where
# torch.compile reads at 81-84%), each kernel's time.
export PYTHONPATH=$PWD/src
commit=${1:?commit}
timeout 300 python3 -m layoutfuse.bench.tune --profile norm_varsums_colmajor_reduce_outer_float32 \
  norm_varsums_colmajor_reduce_outer_bfloat16 2>&1 \
  | grep -v "^\[\|UserWarning\|_warn_once\|^  \|^$\|warnings.warn" | tee $OUT/tune-varsums-table-$commit.txt
