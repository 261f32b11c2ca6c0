#!/usr/bin/env bash
# One device call per PART (sessions 13-14). PART=a: the norm backwards under cross-kernel tunings (tools/dev/tune_ops.py,
# VARIANTS, each kernel's device time) with eager and torch.compile beside them.
# PART=b: the ops suite (OPS_FILTER), the Thunder benchmark, the host overhead.
# PART=c: the test suite with CUDA tensors (16 shards, Thunder's tests too).
# PART=e: c, then b without Thunder; PART=f: b's Thunder runs, then random seeds (SEEDS).
# Carry .wheels (Thunder and its dependencies, installed to /tmp/tsite).
set -u
out=${OUT:?}; commit=${COMMIT:?}; day=$(date -u +%Y%m%d)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && echo h200 || echo h100)
pip install -q --no-deps --target /tmp/tsite .wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=$PWD/src:$PWD:/tmp/tsite LAYOUTFUSE_BENCH_COMMIT=$commit LAYOUTFUSE_CACHE_DIR=$out/cache
export PYTHONUNBUFFERED=1
trap 'rm -rf $out/cache' EXIT  # the kernel cache does not come back (files over the count)
case ${PART:?} in
a)
  nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv
  t0=$(date +%s)
  LAYOUTFUSE_MEASURE=0 timeout ${LIMIT:-420} python3 tools/dev/tune_ops.py $out/tune-ops-$day-$commit-$gpu.json --peers $VARIANTS > $out/tune-cross.txt 2>&1
  echo "tune-cross rc=$? $(( $(date +%s) - t0 )) s"; grep -v Warn $out/tune-cross.txt | cut -c1-250 ;;
b)
  for f in ${OPS_FILTERS:-all}; do  # one run per filter, each its own file (none: no run)
    [ "$f" = none ] && continue
    t0=$(date +%s); tag=-$f; [ "$f" = all ] && f="" && tag=""
    timeout ${OPS_S:-170} python3 -m benchmarks ops --filter "$f" --out $out/ops$tag-$day-$commit-$gpu.json > $out/ops$tag.txt 2>&1
    echo "ops $f rc=$? $(( $(date +%s) - t0 )) s"; grep -v "Warn\|warn" $out/ops$tag.txt | tail -14 | cut -c1-300
  done
  if [ -n "${OPS_AB:-}" ]; then  # the same cases under other tuning fields (the old plans)
    t0=$(date +%s)
    timeout 60 python3 -m benchmarks ops --filter "$OPS_AB_FILTER" --systems layoutfuse --tuning "$OPS_AB" --out $out/ops-ab-$day-$commit-$gpu.json > $out/ops-ab.txt 2>&1
    echo "ops-ab rc=$? $(( $(date +%s) - t0 )) s"; grep "^\[" $out/ops-ab.txt | cut -c1-200
  fi
  for f in ${THUNDER_FILTERS:-all}; do  # one run per filter, their rows in one file each
    [ "$f" = none ] && continue
    t0=$(date +%s); tag=-$f; [ "$f" = all ] && f="" && tag=""
    timeout ${THUNDER_S:-230} python3 -m benchmarks thunder --filter "$f" --out $out/thunder$tag-$day-$commit-$gpu.json > $out/thunder$tag.txt 2>&1
    echo "thunder $f rc=$? $(( $(date +%s) - t0 )) s"; grep -v "Warn\|warn" $out/thunder$tag.txt | tail -12 | cut -c1-400
  done
  [ "${OVERHEAD:-1}" = 1 ] || exit
  t0=$(date +%s)
  timeout 60 python3 -m benchmarks overhead --out $out/overhead-$day-$commit-$gpu.json > $out/overhead.txt 2>&1
  echo "overhead rc=$? $(( $(date +%s) - t0 )) s"; tail -25 $out/overhead.txt ;;
d)  # one call: the changed areas' tests with CUDA tensors (8 shards), then part b's runs
  t0=$(date +%s)
  TEST_PATHS="$TESTS" timeout ${TESTS_S:-150} tools/gpu-tests $out/tests 8 > $out/tests-summary.txt 2>&1
  echo "tests rc=$? $(( $(date +%s) - t0 )) s"; tail -12 $out/tests-summary.txt
  cat $out/tests/tests-shard-*.log | grep -a "^FAILED\|^ERROR\|passed\|failed" > $out/tests-gpu-$day-$commit-$gpu.txt
  for f in $(grep -l "^FAILED\|^ERROR" $out/tests/tests-shard-*.log | head -2); do cp $f $out/; done
  rm -rf $out/tests
  PART=b OUT=$out COMMIT=$commit OVERHEAD=0 bash $0
  rm -f $out/ops*.txt $out/thunder*.txt $out/tests-summary.txt  # 8 files come back at most
  exit ;;
e)  # one call: the whole suite with CUDA tensors (16 shards), then the ops suite and the overhead
  PART=c OUT=$out COMMIT=$commit LIMIT=${TESTS_S:-270} bash $0
  PART=b OUT=$out COMMIT=$commit THUNDER_FILTERS=none bash $0
  rm -f $out/ops*.txt $out/overhead.txt $out/tests-summary.txt
  exit ;;
f)  # one call: the Thunder benchmark, then random seeds (SEEDS, CASES each)
  PART=b OUT=$out COMMIT=$commit OPS_FILTERS=none OVERHEAD=0 bash $0
  rm -f $out/thunder*.txt
  for s in ${SEEDS:-1}; do
    t0=$(date +%s)
    timeout ${RANDOM_S:-300} python3 -m benchmarks suite random --seed $s --cases ${CASES:-120} --out $out/random_seed$s-$day-$commit-$gpu.json > $out/random$s.txt 2>&1
    echo "random $s rc=$? $(( $(date +%s) - t0 )) s"; grep -v "Warn\|warn" $out/random$s.txt | tail -30 | cut -c1-250
    rm -f $out/random$s.txt
  done ;;
g)  # one call of diagnoses: named tests' failures, torch's CUDA sort of -NaN, ops cases
  # under tunings with each kernel's time (OPS_TUNE: filter;tuning tuning ...), random cases' params variants
  t0=$(date +%s)
  TEST_PATHS="$TESTS" timeout ${TESTS_S:-150} tools/gpu-tests $out/tests 8 > /dev/null 2>&1
  echo "tests rc=$? $(( $(date +%s) - t0 )) s"
  cat $out/tests/tests-shard-*.log | grep -a "^FAILED\|^ERROR\|passed\|failed" > $out/tests-gpu-$day-$commit-$gpu.txt
  cat $out/tests/tests-shard-*.log | grep -a "^E  \|^FAILED\|^ERROR\|passed\|failed" | cut -c1-300 | head -40; rm -rf $out/tests
  python3 -c "import torch; x=torch.tensor([1.0, -float('nan'), float('nan'), -float('inf')]); print('cpu', torch.argsort(x).tolist(), 'cuda', torch.argsort(x.cuda()).tolist(), torch.argsort(x.cuda(), stable=True).tolist(), 'topk cuda', torch.topk(x.cuda(), 2).indices.tolist())"
  echo "$OPS_TUNE" | tr '|' '\n' | while IFS=';' read f tunings; do
    [ -z "$f" ] && continue
    t0=$(date +%s)
    LAYOUTFUSE_MEASURE=0 timeout ${TUNE_S:-120} python3 tools/dev/tune_ops.py $out/tune-ops-$f-$day-$commit-$gpu.json --peers --filter $f $tunings 2>&1 | grep -v Warn | cut -c1-330
    echo "tune_ops $f rc=$? $(( $(date +%s) - t0 )) s"
  done
  echo "${RANDOM_RUNS:-}" | tr '|' '\n' | while IFS=';' read cases variants; do  # cases;--variant x ...
    [ -z "$cases" ] && continue
    t0=$(date +%s)
    LAYOUTFUSE_MEASURE=0 timeout ${RTUNE_S:-100} python3 -m benchmarks tune $cases --profile ${variants:---variant=} 2>&1 | grep -v "Warn\|warn" | tee -a $out/tune-random-$day-$commit-$gpu.txt | cut -c1-400 | tail -20
    echo "tune $cases rc=$? $(( $(date +%s) - t0 )) s"
  done
  [ -n "${THUNDER_FILTERS:-}" ] && PART=b OUT=$out COMMIT=$commit OPS_FILTERS=none OVERHEAD=0 bash $0
  rm -f $out/thunder*.txt ;;
c)
  t0=$(date +%s)
  timeout ${LIMIT:-480} tools/gpu-tests $out/tests 16 > $out/tests-summary.txt 2>&1
  echo "tests rc=$? $(( $(date +%s) - t0 )) s"; tail -40 $out/tests-summary.txt
  cat $out/tests/tests-shard-*.log | grep -a "^FAILED\|^ERROR\|passed\|failed" > $out/tests-gpu-$day-$commit-$gpu.txt
  for f in $(grep -l "^FAILED\|^ERROR" $out/tests/tests-shard-*.log); do cp $f $out/; done
  rm -rf $out/tests ;;
esac
rm -rf $out/cache
