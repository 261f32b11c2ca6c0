#!/usr/bin/env bash
# GPU session 9, call 2: the whole test suite with CUDA tensors (Thunder's tests too), the
# ops suite, the Thunder benchmark, host overhead, and A/Bs of this session's rules.
set -u
out=${OUT:?}; commit=${COMMIT:?}; day=$(date -u +%Y%m%d)
pip install -q --no-deps --target /tmp/tsite .wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=$PWD/src:$PWD:/tmp/tsite LAYOUTFUSE_BENCH_COMMIT=$commit
t0=$(date +%s)
timeout 240 tools/gpu-tests /tmp/tests 14 > $out/tests-summary.txt 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"; cat $out/tests-summary.txt | tail -25
cat /tmp/tests/tests-shard-*.log | grep -a "^FAILED\|^ERROR\|passed\|failed" > $out/tests-gpu-$day-$commit-h200.txt
timeout 150 python3 -m benchmarks ops --out $out/ops-$day-$commit-h200.json > $out/ops.txt 2>&1
echo "ops rc=$? $(( $(date +%s) - t0 )) s"; grep -v "^\[" $out/ops.txt | tail -40
timeout 150 python3 -m benchmarks thunder --out $out/thunder-$day-$commit-h200.json > $out/thunder.txt 2>&1
echo "thunder rc=$? $(( $(date +%s) - t0 )) s"; grep -v "^\[" $out/thunder.txt | tail -30
timeout 40 python3 -m benchmarks overhead --out $out/overhead-$day-$commit-h200.json > $out/overhead.txt 2>&1
echo "overhead rc=$?"; tail -25 $out/overhead.txt
