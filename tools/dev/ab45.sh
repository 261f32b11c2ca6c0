#!/usr/bin/env bash
# Session 27's first call, the A/Bs (LAYOUTFUSE_MEASURE=0): (1) a bf16 RMS norm over the
# strided dim of [15307, 4096] (r3_017, looped at 42% of the read ceiling, peers 1.13x
# faster) as a persistent tile of 8 or 16 columns against the looped plan; (2) small
# transposes behind the peers (grids of 111-224 programs of 64 x 64) under
# transpose_fill 2 and 4 and 128-byte edges; (3) small full reductions behind the peers
# (2-3 loop steps a split program) under few_rounds_inner; (4) gathers and small
# pointwise cases (512 or fewer programs) under tile_fill 4 and 8, the gathers with
# eager and torch.compile. Carry .wheels. About 300 s.
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
TUNE_S=80 run_tune r3_047 r1_076 r2_025 r2_051 r3_013 r2_071 r3_001 \
  --tuning "" --tuning pointwise.tile_fill=4 --tuning pointwise.tile_fill=8 --tuning ""
t0=$(date +%s)
LAYOUTFUSE_MEASURE=0 timeout 100 python3 tools/dev/tune_ops.py $out/tune-ops-ab45-$day-$commit-$gpu.json \
  --peers --filter "take_along_axis_k|index_select|embedding" pointwise.tile_fill=0 \
  pointwise.tile_fill=4 pointwise.tile_fill=8 pointwise.tile_fill=0 2>&1 | grep -v "Warn\|warn" \
  | tee -a $out/tune-ab45-$day-$commit-$gpu.txt | cut -c1-260
echo "ops rc=$? $(( $(date +%s) - t0 )) s"
