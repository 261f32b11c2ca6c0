#!/usr/bin/env bash
# Session 26's one call (device starts kept failing; everything in it). (1) The finish of
# the norm backwards' cross reductions as a programmatic dependent launch or not
# (cross_pdl), bf16, each kernel's device time, with eager and torch.compile; (2)
# cumsum's chain mode against the loop and split; (3) the index-map changes against the
# code before them (abold/src, carried), new, old, new; (4) the chain's, the cross
# reductions' and the intermediates' tests with CUDA tensors; (5) the whole suite with
# CUDA tensors (16 shards) in what is left. Carry abold and .wheels. About 520 s.
. "$(dirname "$0")/device_env.sh"
T0=$(date +%s)
t0=$(date +%s)
LAYOUTFUSE_MEASURE=0 timeout 120 python3 tools/dev/tune_ops.py $out/tune-ops-ab43-pdl-$day-$commit-$gpu.json \
  --peers --filter "layer_norm_bwd,bfloat16|rms_norm_bwd,bfloat16" "" cross_pdl=0 "" cross_pdl=0 2>&1 \
  | grep -v "Warn\|warn" | tee -a $out/tune-ops-ab43-$day-$commit-$gpu.txt | cut -c1-260
echo "pdl rc=$? $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
LAYOUTFUSE_MEASURE=0 timeout 110 python3 tools/dev/tune_ops.py $out/tune-ops-ab43-chain-$day-$commit-$gpu.json \
  --filter "cumsum_dim0|cumsum_dim1_colmajor|cumsum_split|cumsum_long" "" scan.chain_tiles_per_sm=8 2>&1 \
  | grep -v "Warn\|warn" | tee -a $out/tune-ops-ab43-$day-$commit-$gpu.txt | cut -c1-260
echo "chain rc=$? $(( $(date +%s) - t0 )) s"
cases="cat2_inner_odd_bfloat16|cat2_inner_odd_float32|cat3_inner_bfloat16|pad_inner_bfloat16"
for tree in new old new; do
  t0=$(date +%s)
  src=$PWD/src; [ $tree = old ] && src=$PWD/abold/src
  PYTHONPATH=$src:$PWD LAYOUTFUSE_MEASURE=0 timeout 60 python3 tools/dev/tune_ops.py \
    $out/tune-ops-ab43-index-$tree-$day-$commit-$gpu.json --filter "$cases" "" 2>&1 \
    | grep -v "Warn\|warn" | sed "s/^/$tree /" | tee -a $out/tune-ops-ab43-$day-$commit-$gpu.txt | cut -c1-200
  echo "$tree rc=$? $(( $(date +%s) - t0 )) s"
done
t0=$(date +%s)
timeout 150 python3 -m pytest -q -x -p no:cacheprovider --device cuda tests/codegen/test_scan_chain.py \
  tests/segmenter/test_cross_reductions.py tests/runtime/test_intermediates.py 2>&1 | tail -5
echo "tests rc=$? $(( $(date +%s) - t0 )) s"
left=$(( 575 - ($(date +%s) - T0) ))
echo "whole suite: $left s left"
[ $left -gt 100 ] && PART=c LIMIT=$left OUT=$out COMMIT=$commit bash tools/gpu-run.sh 2>&1 | tail -25
