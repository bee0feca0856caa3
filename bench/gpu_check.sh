#!/usr/bin/env bash
# Every GPU check in one call (the device time is short): the detector library's torch
# paths (tests comparing numpy with torch on CUDA, then bench/detectors.py), then the
# embedding pipeline's throughput (bench/gpu_embed_check.sh). Results land in $OUT.
#
# The GPU machine has torch but not open_clip; make the wheels here first (ignored by git):
#   echo /.whl/ >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#     --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
#     --platform manylinux2014_x86_64 -d .whl open_clip_torch==3.3.0 ftfy wcwidth regex tqdm
# then: run(command="bash bench/gpu_check.sh", carry=[".whl"], timeout_s=540)
set -uo pipefail
OUT="${OUT:-/tmp/telltale-gpu-out}"
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1

# The GPU image has torch, numpy, scipy and scikit-learn but not the service's packages,
# so the detector tests run without the service's conftest and without pytest-timeout.
timeout -k 5 100 python3 -m pytest tests/detectors/test_drift_mmd.py tests/detectors/test_active_learning.py \
  -q -p no:cacheprovider --noconftest -o addopts="" -W ignore::DeprecationWarning \
  -W ignore::pytest.PytestConfigWarning 2>&1 | tail -n 15 | tee "$OUT/detector_tests.txt"
echo "detector tests exit ${PIPESTATUS[0]}"

timeout -k 5 150 python3 bench/detectors.py --device cuda --repeats 3 \
  >"$OUT/bench_detectors_cuda.json" 2>"$OUT/bench_detectors_cuda.stderr"
echo "detector bench exit $?"
cat "$OUT/bench_detectors_cuda.json"; tail -n 5 "$OUT/bench_detectors_cuda.stderr"

bash bench/gpu_embed_check.sh
