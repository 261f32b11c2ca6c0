#!/usr/bin/env bash
# Session 27's first call: (1) a bf16 RMS norm over the strided dim of [15307, 4096]
# (r3_017, looped at 42% of the read ceiling, peers 1.13x faster) as a persistent tile of
# 8 or 16 columns against the looped plan; (2) small transposes behind the peers (grids
# of 111-224 programs of 64 x 64) under transpose_fill 2 and 4 and 128-byte edges; (3) small full
# reductions behind the peers (2-3 loop steps a split program) under few_rounds_inner;
# (4) the whole suite with CUDA tensors (16 shards). Carry .wheels. About 480 s.
. "$(dirname "$0")/device_env.sh"
TUNE_LOG=tune-ab45
run_tune r3_017 --variant "" --variant mode=persistent,block_x=8,block_r=4096,num_warps=16 \
  --variant mode=persistent,block_x=8,block_r=4096,num_warps=32 \
  --variant mode=persistent,block_x=16,block_r=4096,num_warps=32 --variant ""
TUNE_S=130 run_tune r3_084 r3_109 r3_066 r3_068 r2_026 r2_055 r3_080 r1_092 r3_091 r1_054 \
  --tuning "" --tuning pointwise.transpose_fill=2 --tuning pointwise.transpose_fill=4 \
  --tuning pointwise.transpose_edge_bytes=128 --tuning ""
TUNE_S=80 run_tune r3_062 r1_008 r2_119 r3_021 r1_040 r1_070 \
  --tuning "" --tuning reduction.few_rounds_inner=1 --tuning "" --tuning reduction.few_rounds_inner=1
PART=c OUT=$out COMMIT=$commit LIMIT=${TESTS_S:-290} bash tools/gpu-run.sh
