# Sourced by the device-call scripts (ab32.sh, ab33.sh): out, commit, day and gpu for the
# result names, Thunder's wheels installed from .wheels, the environment the runs share.
set -u
out=${OUT:?}; commit=${COMMIT:?}; day=$(date -u +%Y%m%d)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && echo h200 || echo h100)
pip install -q --no-deps --target /tmp/tsite .wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=$PWD/src:$PWD:/tmp/tsite PYTHONUNBUFFERED=1 LAYOUTFUSE_CACHE_DIR=/tmp/lfcache
export LAYOUTFUSE_BENCH_COMMIT=$commit
