#!/usr/bin/env bash
# Session 25's middle call. (1) reduction.scalar_inner_item=4 (off) on the twelve random
# cases whose plans it changes (inner tiles the aligned loop leaves scalar: several
# reduced groups, Welfords, rows Triton knows no alignment of), each kernel's time and
# registers; (2) r2_106 (a pinned fp16 sum over H of a sliced [30, 64, 112, 112]: W of
# 112 padded to 128 columns) under tiles spanning W and C (x_span=2, the index x % 112,
# as Inductor's kernel); (3) random seed 2 at this commit (continuation_to_store,
# scalar_outer_item and the short-body full blocks on); between them, (4) each kernel's
# time in the nanoGPT bf16 block's forward+backward (attention decomposed), Thunder on
# layoutfuse beside torch.compile (tools/dev/block_kernels.py). Carry .wheels. About
# 400 s plus the start.
. "$(dirname "$0")/device_env.sh"
export TUNE_LOG=tune-ab40 TUNE_S=150
run_tune "r1_029 r1_088 r1_114 r2_007 r2_022 r2_034 r2_035 r2_049 r2_116 r3_023 r3_036 r3_117" \
  --tuning "" --tuning reduction.scalar_inner_item=4
TUNE_S=60 run_tune r2_106 --variant "" \
  --variant x_span=2,block_x=128,block_r=16,unroll=1,num_warps=4,split=1 \
  --variant x_span=2,block_x=256,block_r=16,unroll=1,num_warps=4,split=1 \
  --variant x_span=2,block_x=256,block_r=16,unroll=1,num_warps=8,split=1 \
  --variant x_span=2,block_x=128,block_r=32,unroll=1,num_warps=4,split=1 \
  --variant x_span=2,block_x=64,block_r=32,unroll=1,num_warps=4,split=1 \
  --variant x_span=2,block_x=512,block_r=8,unroll=1,num_warps=8,split=1
t0=$(date +%s)
timeout 150 python3 tools/dev/block_kernels.py nanogpt_block bfloat16 2>&1 | grep -v "Warn\|warn" > $out/block-kernels-$day-$commit-$gpu.txt
echo "block kernels rc=$? $(( $(date +%s) - t0 )) s"; head -70 $out/block-kernels-$day-$commit-$gpu.txt | cut -c1-200
t0=$(date +%s)
timeout ${RANDOM_S:-230} python3 -m benchmarks suite random --seed 2 --cases 120 --out $out/random_seed2-$day-$commit-$gpu.json > $out/random2.txt 2>&1
echo "random 2 rc=$? $(( $(date +%s) - t0 )) s"; grep -v "Warn\|warn" $out/random2.txt | tail -30 | cut -c1-250
rm -f $out/random2.txt
