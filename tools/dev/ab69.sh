#!/usr/bin/env bash
# Session 35's first call: session 34's changed areas with CUDA tensors (ab68.sh's tests),
# the outer looped plan of r3_017 against the segmented plan (loop_min_row_bytes=256 leaves
# 120 column blocks: split reductions, then the pointwise kernel), ab67.sh's bf16 rows
# held whole against the looped mode, and full bf16 var_means under tile variants (their
# fixed cost against a sum's). Kernel times, the measured choice off.
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
timeout 150 python3 -m pytest -q -p no:cacheprovider --device cuda tests/segmenter/test_segment_regressions.py \
  tests/runtime/test_output_views.py tests/runtime/test_made_broadcasts.py \
  tests/schedulers/test_reduction_scalar_inner.py tests/schedulers/test_reduction_transposed.py \
  > $out/tests-gpu-changed-$day-$commit-$gpu.txt 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"; tail -3 $out/tests-gpu-changed-$day-$commit-$gpu.txt
TUNE_LOG=tune-ab69 TUNE_S=50 run_tune r3_017_rmsnorm_bfloat16_15307x4096_mem10_d1 --tuning "" \
  --tuning normalization.loop_min_row_bytes=256 \
  --tuning normalization.loop_min_row_bytes=256,normalization.loop_row_bytes=512
for c in r2_009_var_mean_bfloat16_756x128256_mem01_d01 r1_006_var_mean_bfloat16_117x1x386124_mem012_d012; do
  TUNE_LOG=tune-ab69 TUNE_S=45 run_tune $c --variant "" --variant num_warps=8 --variant unroll=1 \
    --variant block_r=1024 --variant finish=kernel
done
bash "$(dirname "$0")/ab67.sh"
