#!/usr/bin/env bash
# (Run at 13ecbf5. The look-back was reverted after this call: see benchmarks/NOTES.md "Session 23";
# tools/dev/lookback_stress.py and the mode are in 94cc221 and 13ecbf5.)
# Session 23's first device call: cumsum's one-pass look-back (94cc221). (1) the scan tests
# with CUDA tensors (the look-back layouts' full sweep); (2) a stress run of the look-back
# (tools/dev/lookback_stress.py: wrong running sums would show now and then); (3) the ops
# suite's cumsum cases under the look-back and without it (scan.lookback=0: the split
# and the narrowed loop), for long rows too (loop_tiles_per_sm), its window and tile, with
# eager and torch.compile beside them; (4) ab33's copy probe and Thunder's nanoGPT rows
# (ea64c25's binding of a viewed library result, untimed). Carry .wheels. About 450 s.
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
timeout 120 python3 -m pytest -q -x -p no:cacheprovider --device cuda --full tests/codegen/test_scan_lookback.py \
  tests/ir/test_scans.py tests/schedulers/test_scan.py tests/codegen/test_scan_ptx.py -k "cumsum or look" > $out/scan-tests.txt 2>&1
echo "scan tests rc=$? $(( $(date +%s) - t0 )) s"; grep -a "^FAILED\|^ERROR\|^E  \|passed\|failed" $out/scan-tests.txt | head -20 | cut -c1-250
t0=$(date +%s)
timeout 90 python3 tools/dev/lookback_stress.py 20 > $out/lookback-stress-$day-$commit-$gpu.txt 2>&1
echo "stress rc=$? $(( $(date +%s) - t0 )) s"; grep -v "Warn\|warn" $out/lookback-stress-$day-$commit-$gpu.txt | tail -12 | cut -c1-200
t0=$(date +%s)
LAYOUTFUSE_MEASURE=0 timeout 150 python3 tools/dev/tune_ops.py $out/tune-ops-cumsum-$day-$commit-$gpu.json --peers --filter cumsum \
  scan.lookback=1 scan.lookback=0 scan.loop_tiles_per_sm=1000000 scan.lookback_window=2 scan.tile_elements=8192 > $out/tune-ab34-$day-$commit-$gpu.txt 2>&1
echo "tune rc=$? $(( $(date +%s) - t0 )) s"; grep -v "Warn\|warn" $out/tune-ab34-$day-$commit-$gpu.txt | cut -c1-170 | tail -75
nanogpt_copies_and_rows 70 100
rm -rf /tmp/lfcache
