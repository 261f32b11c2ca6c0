#!/usr/bin/env bash
# Session 36's last call (564 s of device time left after refusals): ab72.sh's A/B of the
# plans loop_outer_l2 and loop_min_blocks changed (the fixed suite's strided
# normalizations, r3_101), then seed 3 under RANDOM_S seconds (partial where it runs out).
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
OLD=normalization.loop_outer_l2=0,normalization.loop_min_blocks=1
for c in norm_softmax_colmajor_reduce_outer_float32 norm_layernorm_colmajor_reduce_outer_float32 \
  norm_softmax_3d_reduce_middle_bfloat16 norm_layernorm_3d_reduce_middle_bfloat16 \
  r3_101_log_softmax_bfloat16_5142x64x28x28_mem0231_d0; do
  TUNE_LOG=tune-ab73 TUNE_S=${TUNE_S:-30} run_tune $c --tuning "" --tuning $OLD
done
echo "ab done $(( $(date +%s) - t0 )) s"
run_seeds ${SEEDS:-3}
echo "all $(( $(date +%s) - t0 )) s"
