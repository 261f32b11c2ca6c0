#!/usr/bin/env bash
# The next session's first device call (written at the end of session 22, not run): the
# Thunder benchmark's nanoGPT rows and the copy probe, which time ea64c25's binding of a
# library result that other outputs view (the SDPA block's last 0.038 ms of copies), then
# the whole suite with CUDA tensors (loop stores, the generated programs' reduced outputs,
# eded723's epilogue fix). Carry .wheels. About 330 s.
. "$(dirname "$0")/device_env.sh"
t0=$(date +%s)
timeout 90 python3 tools/dev/copy_probe.py nanogpt_block_sdpa > $out/copy-probe-$day-$commit-$gpu.txt 2>&1
echo "copy probe rc=$? $(( $(date +%s) - t0 )) s"; grep -v "Warn\|warn" $out/copy-probe-$day-$commit-$gpu.txt | cut -c1-160 | head -40
t0=$(date +%s)
timeout 100 python3 -m benchmarks thunder --filter nanogpt --out $out/thunder-nanogpt-$day-$commit-$gpu.json > $out/thunder.txt 2>&1
echo "thunder rc=$? $(( $(date +%s) - t0 )) s"; grep "^\[" $out/thunder.txt | cut -c1-300; rm -f $out/thunder.txt
rm -rf /tmp/lfcache
PART=c OUT=$out COMMIT=$commit LIMIT=280 bash tools/gpu-run.sh
