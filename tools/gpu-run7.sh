#!/usr/bin/env bash
# GPU session 12. PART=a: the norm backwards of the ops suite against eager and
# torch.compile, the cross reductions' tuning A/B (tools/dev/tune_cross.py), the Thunder
# benchmark; PART=b: the test suite with CUDA tensors (16 shards, Thunder's tests too);
# PART=c: tune_cross.py over VARIANTS, then PART=b.
# Carry .wheels (Thunder and its dependencies, installed to /tmp/tsite).
set -u
out=${OUT:?}; commit=${COMMIT:?}; day=$(date -u +%Y%m%d)
pip install -q --no-deps --target /tmp/tsite .wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=$PWD/src:$PWD:/tmp/tsite LAYOUTFUSE_BENCH_COMMIT=$commit LAYOUTFUSE_CACHE_DIR=$out/cache
case ${PART:?} in
a)
  t0=$(date +%s)
  timeout 120 python3 -m benchmarks ops --filter _bwd --out $out/ops_backward-$day-$commit-h200.json > $out/ops.txt 2>&1
  echo "ops rc=$? $(( $(date +%s) - t0 )) s"; grep -v "^\[" $out/ops.txt | tail -30 | cut -c1-240
  t0=$(date +%s)
  timeout 120 python3 tools/dev/tune_cross.py $out/tune-cross-$day-$commit-h200.json > $out/tune-cross.txt 2>&1
  echo "tune-cross rc=$? $(( $(date +%s) - t0 )) s"; cat $out/tune-cross.txt | grep -v Warn | tail -30
  t0=$(date +%s)
  timeout 260 python3 -m benchmarks thunder --out $out/thunder-$day-$commit-h200.json > $out/thunder.txt 2>&1
  echo "thunder rc=$? $(( $(date +%s) - t0 )) s"; grep -v "^\[\|Warn\|warn" $out/thunder.txt | tail -30 ;;
b|c)
  if [ "$PART" = c ]; then
    t0=$(date +%s)
    timeout 150 python3 tools/dev/tune_cross.py $out/tune-cross2-$day-$commit-h200.json $VARIANTS > $out/tune-cross2.txt 2>&1
    echo "tune-cross rc=$? $(( $(date +%s) - t0 )) s"; grep -v Warn $out/tune-cross2.txt | tail -40 | cut -c1-200
  fi
  t0=$(date +%s)
  timeout 420 tools/gpu-tests $out/tests 16 > $out/tests-summary.txt 2>&1
  echo "tests rc=$? $(( $(date +%s) - t0 )) s"; tail -40 $out/tests-summary.txt
  cat $out/tests/tests-shard-*.log | grep -a "^FAILED\|^ERROR\|passed\|failed" > $out/tests-gpu-$day-$commit-h200.txt
  for f in $(grep -l "^FAILED\|^ERROR" $out/tests/tests-shard-*.log); do cp $f $out/; done
  rm -rf $out/tests ;;
d)
  t0=$(date +%s)
  timeout 150 python3 tools/dev/tune_cross.py $out/tune-cross3-$day-$commit-h200.json $VARIANTS > $out/tune-cross3.txt 2>&1
  echo "tune-cross rc=$? $(( $(date +%s) - t0 )) s"; grep -v Warn $out/tune-cross3.txt | tail -48 | cut -c1-130
  t0=$(date +%s)
  timeout 300 python3 -m pytest -q -p no:cacheprovider --device cuda -x tests/test_generated_programs.py > $out/generated.txt 2>&1
  echo "generated rc=$? $(( $(date +%s) - t0 )) s"; grep -a -B2 -A30 "Error\|error" $out/generated.txt | head -80; tail -3 $out/generated.txt ;;
esac
rm -rf $out/cache
