#!/usr/bin/env bash
# GPU session 11: PART=a: the ticket finish's step limit on the cases that take a finishing
# kernel (tune --tuning), the fixed pointwise suite on layoutfuse alone (the 4 KB tile), the
# random suite's SEEDS; PART=b: the random suite's SEEDS; PART=c: the test suite with CUDA
# tensors (16 shards), the random suite's SEEDS if given, the Thunder benchmark if THUNDER=1.
set -u
out=${OUT:?}; commit=${COMMIT:?}; day=$(date -u +%Y%m%d)
export PYTHONPATH=$PWD/src:$PWD LAYOUTFUSE_BENCH_COMMIT=$commit LAYOUTFUSE_CACHE_DIR=$out/cache
seeds() {
  for seed in $SEEDS; do
    t0=$(date +%s)
    timeout ${LIMIT:-300} python3 -m benchmarks suite random --seed $seed --cases 120 \
      --out $out/random_seed$seed-$day-$commit-h200.json > $out/random$seed.txt 2>&1
    echo "seed $seed rc=$? $(( $(date +%s) - t0 )) s"; grep -v "^\[" $out/random$seed.txt | tail -40 | cut -c1-230
  done
}
case ${PART:?} in
a)
  t0=$(date +%s)
  timeout 100 python3 -m benchmarks tune r1_048 r1_099 r3_057 r2_037 r2_068 sweep_mem012_sum01 seed_colmajor_sum1 \
    --tuning "" --tuning reduction.ticket_steps=8 --tuning reduction.ticket_steps=16 \
    --out $out/tune-ticket-$day-$commit-h200.json > $out/tune-ticket.txt 2>&1
  echo "ticket rc=$? $(( $(date +%s) - t0 )) s"; grep -v "^\[" $out/tune-ticket.txt | tail -24
  t0=$(date +%s)
  timeout 170 python3 -m benchmarks suite pointwise --systems layoutfuse \
    --out $out/pointwise_layoutfuse-$day-$commit-h200.json > $out/pointwise.txt 2>&1
  echo "pointwise rc=$? $(( $(date +%s) - t0 )) s"; grep -v "^\[" $out/pointwise.txt | tail -14
  seeds ;;
b) seeds ;;
c)
  t0=$(date +%s)
  timeout 300 tools/gpu-tests $out/tests 16 > $out/tests-gpu-$day-$commit-h200.txt 2>&1
  echo "tests rc=$? $(( $(date +%s) - t0 )) s"; tail -40 $out/tests-gpu-$day-$commit-h200.txt
  if [ -n "${PW:-}" ]; then
    t0=$(date +%s)
    timeout 120 python3 -m benchmarks suite pointwise --systems layoutfuse \
      --out $out/pointwise_layoutfuse-$day-$commit-h200.json > $out/pointwise.txt 2>&1
    echo "pointwise rc=$? $(( $(date +%s) - t0 )) s"; grep -v "^\[" $out/pointwise.txt | tail -10
  fi
  [ -n "${SEEDS:-}" ] && seeds
  [ -n "${THUNDER:-}" ] || { rm -rf $out/cache $out/tests; exit 0; }
  t0=$(date +%s)
  timeout 250 python3 -m benchmarks thunder --out $out/thunder-$day-$commit-h200.json > $out/thunder.txt 2>&1
  echo "thunder rc=$? $(( $(date +%s) - t0 )) s"; grep -v "^\[\|Warn\|warn" $out/thunder.txt | tail -30 ;;
esac
rm -rf $out/cache
