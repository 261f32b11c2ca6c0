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
