#!/usr/bin/env bash
# Session 34 (prepared, not run; ab68.sh runs it): bf16 rows held whole at one 16-warp program a multiprocessor (r3_110's rows
# of 9747 ran at 41-60% of the read ceiling, 113 registers a thread) against the looped
# mode (the store pass re-reads its row from L2) at two loop tiles, kernel time each.
. "$(dirname "$0")/device_env.sh"
for c in r3_110_softmax_bfloat16_9747x50257_mem10_d0 r1_058_softmax_bfloat16_17347x32000_mem01_d1 \
  r1_061_layernorm_bfloat16_2x1943x1x16381_mem0213_d3_s2.1.3 r3_041_log_softmax_bfloat16_6122x3293_mem10_d0; do
  TUNE_LOG=tune-ab67 TUNE_S=45 run_tune $c --tuning "" \
    --tuning normalization.max_tile=2048,normalization.loop_tile=4096 \
    --tuning normalization.max_tile=2048,normalization.loop_tile=8192 \
    --tuning normalization.max_tile=2048,normalization.loop_tile=16384
done
