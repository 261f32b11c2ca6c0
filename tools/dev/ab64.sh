#!/usr/bin/env bash
# Session 33, the second call: the changed areas' tests with CUDA tensors, then random
# seeds 1 and 3 (r1_077's row-at-a-time transposed tile, now a measured candidate; r3_021
# in its seed), each under a time limit.
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
timeout 70 python3 -m pytest -q -p no:cacheprovider --device cuda tests/segmenter/test_segment_regressions.py \
  tests/schedulers/test_reduction_transposed.py tests/schedulers/test_measure_candidates.py 2>&1 | tail -3
echo "tests rc=$? $(( $(date +%s) - t0 )) s"
run_seeds ${SEEDS:-1 3}
# r3_093 (fp32 max over rows of 255, 1020 bytes apart: scalar loads; 26.5 us against
# torch.compile's 20.4 at d261dbc): tiles
[ "${TUNE_S:-45}" != 0 ] && TUNE_LOG=tune-r3_093 run_tune r3_093_max_float32_128x1x255x363_mem1302_d12 --variant= \
  --variant block_x=8 --variant block_x=32 --variant block_x=8,num_warps=4 --variant block_x=16,num_warps=4 \
  --variant block_x=4,num_warps=4 --variant block_x=32,num_warps=16
