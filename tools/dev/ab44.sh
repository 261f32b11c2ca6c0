#!/usr/bin/env bash
# Session 26's last call: the tests fixed after ab43 with CUDA tensors (the cross
# reductions' dependent launch, neg's signs, the spanned Welford, the intermediates),
# then the ops suite at this commit (JSON; chart made here). Carry .wheels. About 200 s.
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
timeout 150 python3 -m pytest -q -p no:cacheprovider --device cuda tests/segmenter/test_cross_reductions.py \
  tests/ir/test_math_rows.py tests/schedulers/test_reduction_spanned.py tests/runtime/test_intermediates.py \
  tests/ir/test_random.py tests/ir/test_indexing_ops.py \
  -k "cross or neg_flips or spanned or intermediate or select_of_an_expanded or constant_extent or broadcast_index" \
  2>&1 | grep -a "^FAILED\|passed\|failed" | tee $out/tests-gpu-fixed-$day-$commit-$gpu.txt
echo "tests rc=$? $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
timeout ${OPS_S:-100} python3 -m benchmarks ops --filter "${OPS_FILTER:-}" --out $out/ops-$day-$commit-$gpu.json > $out/ops.txt 2>&1
echo "ops rc=$? $(( $(date +%s) - t0 )) s"; grep -v "Warn\|warn" $out/ops.txt | tail -16 | cut -c1-300; rm -f $out/ops.txt
