#!/usr/bin/env bash
# Session 26's first call. (1) The index-map changes timed against the code before them
# (abold/src: `git archive 9990177^ src`, carried), alternately new, old, new in
# one call: the odd bf16 and fp32 cats, three aligned bf16 cats and the bf16 pad, each
# kernel's device time (tools/dev/tune_ops.py); (2) r3_093 (fp32 max over rows of 255
# elements, no 16-byte row alignment) under inner tiles; (3) the bf16 layer norm
# backward of [32768, 768] (70% of the copy ceiling) under cross tunings. Carry abold
# and .wheels. (4) cumsum's chain mode on the strided and long-row cumsums; (5) its tests,
# the cross reductions' and the intermediates' with CUDA tensors. About 500 s plus the start.
. "$(dirname "$0")/device_env.sh"
cases="cat2_inner_odd_bfloat16|cat2_inner_odd_float32|cat3_inner_bfloat16|cat4_inner_bfloat16|pad_inner_bfloat16"
for tree in new old new; do
  t0=$(date +%s)
  src=$PWD/src; [ $tree = old ] && src=$PWD/abold/src
  PYTHONPATH=$src:$PWD LAYOUTFUSE_MEASURE=0 timeout 100 python3 tools/dev/tune_ops.py \
    $out/tune-ops-ab42-index-$tree-$day-$commit-$gpu.json --filter "$cases" "" 2>&1 \
    | grep -v "Warn\|warn" | sed "s/^/$tree /" | tee -a $out/tune-ops-ab42-$day-$commit-$gpu.txt | cut -c1-200
  echo "$tree rc=$? $(( $(date +%s) - t0 )) s"
done
export TUNE_LOG=tune-ab42 TUNE_S=90
run_tune r3_093 --variant "" \
  --variant block_x=16,num_warps=4 --variant block_x=8,num_warps=2 \
  --variant block_x=32,num_warps=8 --variant block_x=64,num_warps=8 \
  --variant block_x=8,num_warps=4 --variant block_x=4,num_warps=2
t0=$(date +%s)
LAYOUTFUSE_MEASURE=0 timeout 150 python3 tools/dev/tune_ops.py $out/tune-ops-ab42-pdl-$day-$commit-$gpu.json \
  --peers --filter "layer_norm_bwd,bfloat16|rms_norm_bwd,bfloat16" "" cross_pdl=0 "" cross_pdl=0 2>&1 \
  | grep -v "Warn\|warn" | tee -a $out/tune-ops-ab42-$day-$commit-$gpu.txt | cut -c1-260
echo "pdl rc=$? $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
LAYOUTFUSE_MEASURE=0 timeout 100 python3 tools/dev/tune_ops.py $out/tune-ops-ab42-ln768-$day-$commit-$gpu.json \
  --filter layer_norm_bwd_768_bfloat16 "" cross_warps_per_sm=8 cross_warps_per_sm=24 \
  cross_warps_per_sm=32 cross_tile_bytes=4096 cross_tile_bytes=16384 cross_prefetch=0 2>&1 \
  | grep -v "Warn\|warn" | tee -a $out/tune-ops-ab42-$day-$commit-$gpu.txt | cut -c1-260
echo "ln768 rc=$? $(( $(date +%s) - t0 )) s"
# (4) cumsum's chain mode (one pass, decoupled look-back) against the loop and split
t0=$(date +%s)
LAYOUTFUSE_MEASURE=0 timeout 150 python3 tools/dev/tune_ops.py $out/tune-ops-ab42-chain-$day-$commit-$gpu.json \
  --filter "cumsum_dim0|cumsum_dim1_colmajor|cumsum_split|cumsum_long" "" scan.chain_tiles_per_sm=8 \
  scan.chain_tiles_per_sm=8,scan.tile_elements=8192 2>&1 \
  | grep -v "Warn\|warn" | tee -a $out/tune-ops-ab42-$day-$commit-$gpu.txt | cut -c1-260
echo "chain rc=$? $(( $(date +%s) - t0 )) s"
# (5) the chain and the dependent launch with CUDA tensors
t0=$(date +%s)
timeout 200 python3 -m pytest -q -x -p no:cacheprovider --device cuda tests/codegen/test_scan_chain.py \
  tests/segmenter/test_cross_reductions.py tests/runtime/test_intermediates.py 2>&1 | tail -5
echo "tests rc=$? $(( $(date +%s) - t0 )) s"
