#!/usr/bin/env bash
# Session 22's last device call: (1) where the nanoGPT bf16 block with nvFuser's SDPA copies
# tensors (tools/dev/copy_probe.py: the ~0.038 ms of direct_copy kernels of its profile);
# (2) cumsum over a strided dim, the loop mode on narrow row tiles (scan.outer_min_bytes=32,
# the default since c303d9d) against the three-launch split (outer_min_bytes=4096: the
# plan before) and the loop threshold (loop_tiles_per_sm=1), eager and torch.compile
# beside them; (3) the Thunder benchmark (loop stores, library results in torch's layout);
# (4) the ops suite, as far as its time allows. Carry .wheels.
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
timeout 90 python3 tools/dev/copy_probe.py nanogpt_block_sdpa > $out/copy-probe-$day-$commit-$gpu.txt 2>&1
echo "copy probe rc=$? $(( $(date +%s) - t0 )) s"; grep -v "Warn\|warn" $out/copy-probe-$day-$commit-$gpu.txt | cut -c1-160 | head -60
t0=$(date +%s)
LAYOUTFUSE_MEASURE=0 timeout 110 python3 tools/dev/tune_ops.py $out/tune-ops-cumsum-$day-$commit-$gpu.json --peers --filter cumsum_dim \
  scan.outer_min_bytes=32 scan.outer_min_bytes=4096 scan.loop_tiles_per_sm=1 > $out/tune-ab32-$day-$commit-$gpu.txt 2>&1
echo "tune rc=$? $(( $(date +%s) - t0 )) s"; grep -v "Warn\|warn" $out/tune-ab32-$day-$commit-$gpu.txt | cut -c1-170 | tail -30
t0=$(date +%s)
timeout 130 python3 -m benchmarks thunder --out $out/thunder-$day-$commit-$gpu.json > $out/thunder.txt 2>&1
echo "thunder rc=$? $(( $(date +%s) - t0 )) s"; grep "^\[" $out/thunder.txt | cut -c1-300; rm -f $out/thunder.txt
t0=$(date +%s)
timeout ${OPS_S:-140} python3 -m benchmarks ops --out $out/ops-$day-$commit-$gpu.json > $out/ops.txt 2>&1
echo "ops rc=$? $(( $(date +%s) - t0 )) s"; grep -v "Warn\|warn" $out/ops.txt | tail -12 | cut -c1-250; rm -f $out/ops.txt
rm -rf /tmp/lfcache
