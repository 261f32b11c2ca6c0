#!/usr/bin/env bash
# GPU probe 24 (session 6): as probe 23, after the pointwise tile spans 16 rows where a load is broadcast along Y (the layer norm epilogue's per-column statistics); the two-walk kernel against the segmented plan (split
# reduction kernels, then the pointwise kernel) for strided rows: torch.compile's layer
# norm over the column-major [8192, 8192] bf16 read at 53.9% in run 19, ours at 46.8%.
export PYTHONPATH=$PWD/src
commit=${1:?commit}
python3 -m layoutfuse.bench.tune --profile \
  norm_softmax_colmajor_reduce_outer_float32 norm_layernorm_colmajor_reduce_outer_float32 \
  norm_softmax_colmajor_reduce_outer_bfloat16 norm_layernorm_colmajor_reduce_outer_bfloat16 \
  norm_softmax_3d_reduce_middle_float32 norm_layernorm_3d_reduce_middle_float32 \
  norm_softmax_3d_reduce_middle_bfloat16 norm_layernorm_3d_reduce_middle_bfloat16 \
  --variant "" --variant mode=segmented 2>&1 \
  | grep -v "^\[\|UserWarning\|_warn_once\|^  \|^$\|warnings.warn" | tee $OUT/tune-normalization-segmented-rows16-$commit.txt
