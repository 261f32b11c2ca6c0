#!/usr/bin/env bash
# Session 21's fourth device call: the two Thunder model tests whose CUDA kernel counts
# changed, the host time of the nanoGPT bf16 block with and without nvFuser SDPA
# (tools/dev/thunder_host.py), then random seeds 2 and 3 at COMMIT. Carry .wheels.
set -u
out=${OUT:?}; commit=${COMMIT:?}; day=$(date -u +%Y%m%d)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && echo h200 || echo h100)
pip install -q --no-deps --target /tmp/tsite .wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=$PWD/src:$PWD:/tmp/tsite LAYOUTFUSE_BENCH_COMMIT=$commit PYTHONUNBUFFERED=1
export LAYOUTFUSE_CACHE_DIR=/tmp/lfcache
t0=$(date +%s)
TEST_PATHS="tests/frontend/test_thunder_models.py" timeout 70 tools/gpu-tests $out/tests 2 \
  -k "attention-bf16 or llama_style_block" > /dev/null 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"
cat $out/tests/tests-shard-*.log | grep -a "^E  \|^FAILED\|^ERROR\|passed\|failed" | cut -c1-300 | head -12 | tee $out/tests-gpu-thunder-models-$day-$commit-$gpu.txt; rm -rf $out/tests
t0=$(date +%s)
timeout 85 python3 tools/dev/thunder_host.py 2>&1 | grep -v "Warn\|warn" > $out/thunder-host-$day-$commit-$gpu.txt
echo "thunder_host rc=$? $(( $(date +%s) - t0 )) s"; grep "ms a step\|synchroniz" $out/thunder-host-$day-$commit-$gpu.txt
for s in 2 3; do
  t0=$(date +%s)
  timeout ${RANDOM_S:-215} python3 -m benchmarks suite random --seed $s --cases 120 --out $out/random_seed$s-$day-$commit-$gpu.json > $out/random$s.txt 2>&1
  echo "random $s rc=$? $(( $(date +%s) - t0 )) s"; grep -v "Warn\|warn" $out/random$s.txt | tail -14 | cut -c1-200
  rm -f $out/random$s.txt
done
