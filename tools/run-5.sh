#!/usr/bin/env bash
# GPU run 5 (session 3): normalization and reduction suites, the demo, the test suite with
# CUDA tensors, all at COMMIT.
export PYTHONPATH=$PWD/src
commit=${1:?commit}
tools/gpu-bench $OUT $commit normalization reduction
python3 -m layoutfuse.demo > $OUT/demo-$commit.log 2>&1; tail -5 $OUT/demo-$commit.log
timeout ${TESTS_S:-330} tools/gpu-tests /tmp/t 12
cat /tmp/t/tests-shard-*.log > $OUT/tests-gpu-$commit.txt
