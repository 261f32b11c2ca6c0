# Sourced by the device-call scripts (ab32.sh, ab33.sh): out, commit, day and gpu for the
# result names, Thunder's wheels installed from .wheels, the environment the runs share.
set -u
out=${OUT:?}; commit=${COMMIT:?}; day=$(date -u +%Y%m%d)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && echo h200 || echo h100)
pip install -q --no-deps --target /tmp/tsite .wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=$PWD/src:$PWD:/tmp/tsite PYTHONUNBUFFERED=1 LAYOUTFUSE_CACHE_DIR=/tmp/lfcache
export LAYOUTFUSE_BENCH_COMMIT=$commit
# The SDPA block's copies (tools/dev/copy_probe.py) and Thunder's nanoGPT rows, each under
# a time limit (seconds: the probe's, then the benchmark's)
nanogpt_copies_and_rows() {
  local t0=$(date +%s)
  timeout ${1:-90} python3 tools/dev/copy_probe.py nanogpt_block_sdpa > $out/copy-probe-$day-$commit-$gpu.txt 2>&1
  echo "copy probe rc=$? $(( $(date +%s) - t0 )) s"; grep -v "Warn\|warn" $out/copy-probe-$day-$commit-$gpu.txt | cut -c1-160 | head -40
  t0=$(date +%s)
  timeout ${2:-100} python3 -m benchmarks thunder --filter nanogpt --out $out/thunder-nanogpt-$day-$commit-$gpu.json > $out/thunder.txt 2>&1
  echo "thunder rc=$? $(( $(date +%s) - t0 )) s"; grep "^\[" $out/thunder.txt | cut -c1-300; rm -f $out/thunder.txt
}
# One case under params variants (python -m benchmarks tune, the measured choice off), its
# lines appended to $out/$TUNE_LOG-<day>-<commit>-<gpu>.txt, under TUNE_S seconds
run_tune() {  # case, then variants
  local c=$1 t0=$(date +%s); shift
  LAYOUTFUSE_MEASURE=0 timeout ${TUNE_S:-60} python3 -m benchmarks tune $c "$@" --profile 2>&1 | grep -v "Warn\|warn" \
    | tee -a $out/${TUNE_LOG:?}-$day-$commit-$gpu.txt | cut -c1-300 | tail -14
  echo "tune $c rc=$? $(( $(date +%s) - t0 )) s"
}
# Random seeds (python -m benchmarks suite random), each under RANDOM_S seconds, their
# results in $out and the report's last lines printed
run_seeds() {  # seeds
  local s t0
  for s in "$@"; do
    t0=$(date +%s)
    timeout ${RANDOM_S:-290} python3 -m benchmarks suite random --seed $s --out $out/random_seed$s-$day-$commit-$gpu.json > $out/random.txt 2>&1
    echo "random $s rc=$? $(( $(date +%s) - t0 )) s"; grep -v "Warn\|warn" $out/random.txt | tail -30 | cut -c1-220; rm -f $out/random.txt
  done
}
