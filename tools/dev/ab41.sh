#!/usr/bin/env bash
# Session 25's last call: issue 14's three remaining losers beside torch.compile, each
# kernel's device time and Inductor's generated code (TORCH_LOGS=output_code, gzipped):
# the odd-width bf16 cat (0.87x), the bf16 cumsum over the strided dim (38% of the copy
# ceiling) and the bf16 layer norm backward (79%). Carry .wheels (unused). About 90 s
# plus the start.
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
TORCH_LOGS=output_code LAYOUTFUSE_MEASURE=0 timeout 150 python3 tools/dev/tune_ops.py \
  $out/tune-ops-ab41-$day-$commit-$gpu.json --peers \
  --filter cat2_inner_odd_bfloat16,cumsum_dim0_bfloat16,layer_norm_bwd_bfloat16 \
  > $out/ab41.txt 2> $out/inductor-code-ops-$day-$commit-$gpu.txt
echo "tune_ops rc=$? $(( $(date +%s) - t0 )) s"; grep -v "Warn\|warn" $out/ab41.txt | cut -c1-300 | tail -40
grep -c "def triton" $out/inductor-code-ops-$day-$commit-$gpu.txt
gzip $out/inductor-code-ops-$day-$commit-$gpu.txt; rm -f $out/ab41.txt
