#!/usr/bin/env bash
# Session 32, the second call: random seed 3 at the defaults (under RANDOM_S seconds), then
# params variants of r2_106 (an fp16 outer sum over 112 rows of 112 contiguous columns,
# the rule's 128-column tile; tiles spanning the columns and the next kept group, x_span=2)
# and the ops suite's odd-width bf16 cat under other generic tile sizes, the measured
# choice off.
. "$(dirname "$0")/device_env.sh"
for s in ${SEEDS:-3}; do
  t0=$(date +%s)
  timeout ${RANDOM_S:-290} python3 -m benchmarks suite random --seed $s --out $out/random_seed$s-$day-$commit-$gpu.json > $out/random.txt 2>&1
  echo "random $s rc=$? $(( $(date +%s) - t0 )) s"; grep -v "Warn\|warn" $out/random.txt | tail -34 | cut -c1-220; rm -f $out/random.txt
done
TUNE_LOG=tune-ab61
run_tune r2_106_sum_float16_30x64x112x112_mem0123_d2_tomem102_s2.1.1 --variant= --variant num_warps=2 \
  --variant x_span=2,block_x=256,block_r=16,unroll=1,num_warps=4 --variant x_span=2,block_x=128,block_r=16,unroll=1,num_warps=2 \
  --variant x_span=2,block_x=512,block_r=8,unroll=1,num_warps=4 --variant x_span=2,block_x=256,block_r=32,unroll=1,num_warps=4 \
  --variant x_span=2,block_x=256,block_r=8,unroll=1,num_warps=2 --variant x_span=2,block_x=64,block_r=32,unroll=1,num_warps=2
run_tune r2_106_sum_float16_30x64x112x112_mem0123_d2_tomem102_s2.1.1 --tuning reduction.span_row_bytes=64 --tuning reduction.span_row_bytes=256
t0=$(date +%s)
LAYOUTFUSE_MEASURE=0 timeout ${TUNE_S:-90} python3 tools/dev/tune_ops.py $out/tune-ops-cat-odd-$day-$commit-$gpu.json --peers --filter "cat2_inner_odd|cat2_inner_bf" pointwise.tile_bytes=4096 pointwise.tile_bytes=2048 pointwise.tile_bytes=1024 pointwise.tile_bytes=8192 2>&1 | grep -v Warn | cut -c1-330
echo "tune_ops cat rc=$? $(( $(date +%s) - t0 )) s"
rm -rf /tmp/lfcache
# the outer cumsum's chain tile: bf16 tiles of as many bytes as fp32's (wider, or longer chunks)
t0=$(date +%s)
LAYOUTFUSE_MEASURE=0 timeout ${TUNE_S:-90} python3 tools/dev/tune_ops.py $out/tune-ops-cumsum-outer-$day-$commit-$gpu.json --filter "cumsum_dim0|cumsum_dim1_col" scan.tile_elements=4096 scan.tile_elements=8192 scan.tile_elements=8192,scan.outer_min_bytes=64 scan.tile_elements=8192,scan.chain_outer_warps=8 2>&1 | grep -v Warn | cut -c1-330
echo "tune_ops cumsum rc=$? $(( $(date +%s) - t0 )) s"
rm -rf /tmp/lfcache
# flat pointwise cases a few % behind eager: bigger tiles (fewer programs, one wave)
TUNE_LOG=tune-ab61
run_tune r2_082_copy_float32_1x256x112x112_mem0231_tomem2310 --variant= --variant block_x=2048 --variant block_x=2048,num_warps=8 --variant block_x=4096,num_warps=8 --variant block_x=512
run_tune r2_051_add_bfloat16_19x256x14x14_mem0231 --variant= --variant block_x=4096 --variant block_x=4096,num_warps=8 --variant block_x=1024 --variant block_x=1024,num_warps=2
# where the small flat cases' extra microsecond goes: gaps, spans and records per call
t0=$(date +%s)
LAYOUTFUSE_MEASURE=0 timeout 100 python3 tools/dev/gap_probe.py r2_082_copy_float32_1x256x112x112_mem0231_tomem2310 r2_051_add_bfloat16_19x256x14x14_mem0231 r3_084_copy_float32_187x3x28x28_mem0123_tomem1230 r3_062_sum_float32_143x2039_mem01_d01 2>&1 | grep -v "Warn\|warn" | tee $out/gap-probe-$day-$commit-$gpu.txt | cut -c1-300
echo "gap probe rc=$? $(( $(date +%s) - t0 )) s"
