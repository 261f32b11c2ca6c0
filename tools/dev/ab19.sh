#!/usr/bin/env bash
# Session 19's second device call: random seed 3, the ops suite, a gather tile A/B (ops
# cases under pointwise.gather_tile_elements, with eager and torch.compile beside them),
# the Thunder GPT-2 block. Carry .wheels. OUT and COMMIT as in tools/gpu-run.sh.
set -u
out=${OUT:?}; commit=${COMMIT:?}; day=$(date -u +%Y%m%d)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && echo h200 || echo h100)
PART=f OUT=$out COMMIT=$commit SEEDS="${SEEDS:-3}" RANDOM_S=${RANDOM_S:-170} THUNDER_FILTERS=none bash tools/gpu-run.sh
export PYTHONPATH=$PWD/src:$PWD PYTHONUNBUFFERED=1 LAYOUTFUSE_CACHE_DIR=/tmp/lfcache
for f in ${GATHER_CASES-take_along_axis_full index_select_rows}; do
  t0=$(date +%s)
  LAYOUTFUSE_MEASURE=0 timeout ${GATHER_S:-45} python3 tools/dev/tune_ops.py $out/tune-ops-$f-$day-$commit-$gpu.json --peers --filter $f \
    pointwise.gather_tile_elements=0 pointwise.gather_tile_elements=1024 pointwise.gather_tile_elements=2048 2>&1 | grep -v "Warn\|warn" | cut -c1-200
  echo "gather $f rc=$? $(( $(date +%s) - t0 )) s"
done
if [ -n "${TUNE_CASES:-}" ]; then  # rule plans (LAYOUTFUSE_MEASURE=0) under tunings: TUNE_CASES;--tuning= --tuning ...
  t0=$(date +%s)
  LAYOUTFUSE_MEASURE=0 timeout ${TUNE_S:-80} python3 -m benchmarks tune ${TUNE_CASES%%;*} ${TUNE_CASES#*;} 2>&1 | grep -v "Warn\|warn" | tee $out/tune-ab19-$day-$commit-$gpu.txt | cut -c1-260
  echo "tune rc=$? $(( $(date +%s) - t0 )) s"
fi
if [ -n "${PEER_CASES:-}" ]; then  # each kernel's time on the three systems (small cases)
  t0=$(date +%s)
  timeout ${PEER_S:-70} python3 tools/dev/peer_kernels.py $PEER_CASES 2>&1 | grep -v "Warn\|warn" | tee $out/peer-kernels-$day-$commit-$gpu.txt | cut -c1-300
  echo "peer kernels rc=$? $(( $(date +%s) - t0 )) s"
fi
PART=b OUT=$out COMMIT=$commit OPS_FILTERS="${OPS_FILTERS:-all}" OPS_S=${OPS_S:-170} THUNDER_FILTERS="${THUNDER_FILTERS:-nanogpt_block}" THUNDER_S=${THUNDER_S:-150} OVERHEAD=0 bash tools/gpu-run.sh
rm -f $out/ops*.txt $out/thunder*.txt
