#!/usr/bin/env bash
# Session 21's third device call: the library-segment, attention and Thunder tests with
# CUDA tensors, then the Thunder benchmark (every program) and the host overhead, at
# COMMIT (views for library operands, torch's attention kernel, 8192-byte inner tiles).
# Carry .wheels.
set -u
out=${OUT:?}; commit=${COMMIT:?}; day=$(date -u +%Y%m%d)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && echo h200 || echo h100)
pip install -q --no-deps --target /tmp/tsite .wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=$PWD/src:$PWD:/tmp/tsite PYTHONUNBUFFERED=1
t0=$(date +%s)
TEST_PATHS="tests/runtime/test_library_segments.py tests/ir/test_library_ops.py tests/frontend/test_thunder_models.py tests/frontend/test_thunder_jit.py tests/benchmarks/test_thunder_bench.py" \
  timeout ${TESTS_S:-150} tools/gpu-tests $out/tests 8 > /dev/null 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"
cat $out/tests/tests-shard-*.log | grep -a "^FAILED\|^ERROR\|passed\|failed" > $out/tests-gpu-library-$day-$commit-$gpu.txt
cat $out/tests/tests-shard-*.log | grep -a "^E  \|^FAILED\|^ERROR\|passed\|failed" | cut -c1-300 | head -30; rm -rf $out/tests
PART=b OUT=$out COMMIT=$commit OPS_FILTERS=none THUNDER_S=${THUNDER_S:-250} bash tools/gpu-run.sh
rm -f $out/thunder*.txt $out/overhead.txt
