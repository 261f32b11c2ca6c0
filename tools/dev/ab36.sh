#!/usr/bin/env bash
# (Run at a6a591b. scan.loop_prefetch was removed after this call: it lost on every case.)
# Session 23's third device call: (1) the random cases whose measured choice gained a
# candidate at 360feae/c27f41c (r2_050 softmax over bf16 rows of 50257, r2_111 sum over
# bf16 rows of 3715, r3_017 RMS norm over a strided bf16 dim), each as the random suite
# runs it (the measured choice on, eager and torch.compile beside it); (2)
# cumsum's loop walk prefetched or pipelined (A/B); (3) the whole suite with CUDA tensors (16
# shards). Carry .wheels. About 480 s.
. "$(dirname "$0")/device_env.sh"
for c in "2 r2_050" "2 r2_111" "3 r3_017"; do
  set -- $c
  t0=$(date +%s)
  timeout 45 python3 -m benchmarks suite random --seed $1 --cases 120 --filter $2 --out $out/random_seed$1-$2-$day-$commit-$gpu.json > $out/r.txt 2>&1
  echo "random $2 rc=$? $(( $(date +%s) - t0 )) s"; grep -v "Warn\|warn" $out/r.txt | grep "$2\|measured\|chose" | cut -c1-330 | head -6
done
rm -f $out/r.txt /tmp/lfcache -r
t0=$(date +%s)  # cumsum's loop walk prefetched or pipelined (scan.loop_prefetch, loop_stages)
LAYOUTFUSE_MEASURE=0 timeout 90 python3 tools/dev/tune_ops.py $out/tune-ops-cumsum-$day-$commit-$gpu.json --filter cumsum \
  scan.loop_stages=1 scan.loop_prefetch=1 scan.loop_stages=2 scan.loop_prefetch=1,scan.outer_min_bytes=64 \
  > $out/tune-ab36-$day-$commit-$gpu.txt 2>&1
echo "tune rc=$? $(( $(date +%s) - t0 )) s"; grep -v "Warn\|warn" $out/tune-ab36-$day-$commit-$gpu.txt | cut -c1-170 | tail -62
PART=c OUT=$out COMMIT=$commit LIMIT=280 bash tools/gpu-run.sh
