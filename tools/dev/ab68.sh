#!/usr/bin/env bash
# Session 34's prepared next call (not run: no device time left): the changed areas' tests
# with CUDA tensors (the finer plan's passes, output views of pinned outputs, expanded
# made broadcasts, session 33's candidates), then ab67.sh's tiles (bf16 rows held whole
# against the looped mode), then random seed 3 at the head.
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
timeout 120 python3 -m pytest -q -p no:cacheprovider --device cuda tests/segmenter/test_segment_regressions.py \
  tests/runtime/test_output_views.py tests/runtime/test_made_broadcasts.py \
  tests/schedulers/test_reduction_scalar_inner.py tests/schedulers/test_reduction_transposed.py 2>&1 | tail -3
echo "tests rc=$? $(( $(date +%s) - t0 )) s"
bash "$(dirname "$0")/ab67.sh"
run_seeds ${SEEDS:-3}
