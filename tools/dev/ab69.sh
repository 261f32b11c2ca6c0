#!/usr/bin/env bash
# Prepared in session 35 (no machine was lent; the next session's first call): session 34's
# and 35's changed areas with CUDA tensors (ab68.sh's tests and the output layout's);
# looped rows under Triton's pipelining (normalization.looped_stages 2 and 3) on the seed
# runs' looped cases, with r3_017's segmented plan beside them (loop_min_blocks=2: its 240
# column blocks are 1.8 a multiprocessor, so split reductions, then the pointwise kernel);
# then ab67.sh's bf16 rows held whole against the looped mode. Kernel times, the measured
# choice off. About 9-10 minutes (give run 600 s); SHORT=1: about 6.
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
timeout 150 python3 -m pytest -q -p no:cacheprovider --device cuda tests/segmenter/test_segment_regressions.py \
  tests/runtime/test_output_views.py tests/runtime/test_made_broadcasts.py \
  tests/schedulers/test_reduction_scalar_inner.py tests/schedulers/test_reduction_transposed.py \
  tests/passes/test_output_layout.py tests/ir/test_math_rows.py tests/schedulers/test_normalization.py \
  > $out/tests-gpu-changed-$day-$commit-$gpu.txt 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"; tail -3 $out/tests-gpu-changed-$day-$commit-$gpu.txt
# (r3_017's outer loads compile to no cp.async under looped_stages: not timed with them)
TUNE_LOG=tune-ab69 TUNE_S=45 run_tune r3_017_rmsnorm_bfloat16_15307x4096_mem10_d1 --tuning "" \
  --tuning normalization.loop_min_blocks=2
# CASES: the looped cases (SHORT=1: three of them, and two of ab67.sh's, for a call that
# must fit what is left of the session's device time)
CASES="r2_050_softmax_bfloat16_2417x50257_mem01_d1 r3_029_layernorm_bfloat16_144032x1024_mem10_d0 \
  r3_046_softmax_float32_251x187377_mem01_d1"
[ -n "${SHORT:-}" ] || CASES="$CASES r1_095_rmsnorm_bfloat16_786x50257_mem01_d1 r3_101_log_softmax_bfloat16_5142x64x28x28_mem0231_d0"
for c in $CASES; do
  TUNE_LOG=tune-ab69 TUNE_S=40 run_tune $c --tuning "" --tuning normalization.looped_stages=2 \
    --tuning normalization.looped_stages=3
done
echo "stages done $(( $(date +%s) - t0 )) s"
if [ -n "${SHORT:-}" ]; then
  for c in r3_110_softmax_bfloat16_9747x50257_mem10_d0 r1_058_softmax_bfloat16_17347x32000_mem01_d1; do
    TUNE_LOG=tune-ab67 TUNE_S=45 run_tune $c --tuning "" \
      --tuning normalization.max_tile=2048,normalization.loop_tile=4096 \
      --tuning normalization.max_tile=2048,normalization.loop_tile=16384
  done
else
  bash "$(dirname "$0")/ab67.sh"
fi
echo "all $(( $(date +%s) - t0 )) s"
