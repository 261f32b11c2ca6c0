#!/usr/bin/env bash
# Session 33, the first call: ab62.sh (r3_021 with the measured choice on and off, taken
# apart by replay_probe.py; the take_along_axis tests with CUDA tensors), then the indexed
# reads' tests with CUDA tensors, once as built and once with TRITON_DEBUG=1 (the device
# asserts compiled, masked by the tile's lanes: an index minus 1 in range must not fire).
. "$(dirname "$0")/device_env.sh"
bash "$(dirname "$0")/ab62.sh"
for dbg in 0 1; do
  t0=$(date +%s)
  TRITON_DEBUG=$dbg timeout 150 python3 -m pytest -q -p no:cacheprovider tests/ir/test_indexing_ops.py tests/ir/test_indexing_writes.py --device cuda 2>&1 | tail -4
  echo "indexing tests TRITON_DEBUG=$dbg rc=$? $(( $(date +%s) - t0 )) s"
done
# r1_077 (var_mean over 7 strided rows, transposed store; 14.9 us against torch.compile's
# 9.4 at d261dbc): tiles
TUNE_LOG=tune-r1_077 TUNE_S=90 run_tune r1_077_var_mean_float32_23235x3x7x7_mem2301_d3_tomem012 --variant= \
  --variant block_x=64 --variant block_x=128 --variant block_x=128,num_warps=8 --variant block_r=1 \
  --variant block_r=1,block_x=128 --variant block_r=1,block_x=128,num_warps=8 --variant num_warps=2 --variant block_x=64,num_warps=8
