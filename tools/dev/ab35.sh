#!/usr/bin/env bash
# Session 23's second device call, diagnoses for issue 16's losing random cases: (1) does a
# split reduction read faster with its programs interleaved block by block than each on a
# contiguous chunk (tools/dev/split_order_probe.py: full sums like r2_091, r3_010, r2_069,
# r2_111's bytes, beside torch.sum); (2) params variants of the largest losing cases
# (python -m benchmarks tune, each kernel's time): r2_050 (softmax over bf16 rows of 50257,
# looped: the tile of 16384 leaves its 4th step 7% full), r3_017 (RMS norm over a strided
# dim of bf16 [15307, 4096]), r2_111 (a sum over bf16 rows of 3715), r2_065 and r3_093
# (fp32 max with odd strides). Carry .wheels (unused). About 300 s.
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
timeout 100 python3 tools/dev/split_order_probe.py > $out/split-order-$day-$commit-$gpu.txt 2>&1
echo "probe rc=$? $(( $(date +%s) - t0 )) s"; grep -v "Warn\|warn" $out/split-order-$day-$commit-$gpu.txt | cut -c1-200
TUNE_LOG=tune-ab35 TUNE_S=${TUNE_S:-70}
run_tune r2_050 --variant "" --variant block_r=8192,num_warps=32 --variant block_r=8192,num_warps=16 \
  --variant block_r=4096,num_warps=16 --variant block_r=4096,num_warps=8 --variant block_r=32768,num_warps=32
run_tune r3_017 --variant "" --variant block_x=128,block_r=64 --variant block_x=128,block_r=32,num_warps=8 \
  --variant block_x=256,block_r=16,num_warps=8 --variant block_x=64,block_r=64,num_warps=8 --variant block_x=256,block_r=32,num_warps=16
run_tune r2_111
TUNE_S=50 run_tune r2_065
TUNE_S=50 run_tune r3_093
rm -rf /tmp/lfcache
