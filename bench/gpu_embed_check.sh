#!/usr/bin/env bash
# Embedding tests and throughput on the GPU machine, in one go, in about 4 minutes at most.
#
#   bash bench/gpu_embed_check.sh        (from the repository root, wheels in ./.whl)
#
# The machine has python3 with torch and torchvision but no open_clip: the wheels in .whl
# (open_clip_torch, ftfy, wcwidth, regex, tqdm; all --no-deps) go to /tmp/site. Writes
# $OUT/cuda_tests.txt (the CUDA tests of tests/pipelines/test_embedding.py) and
# $OUT/embed.json (ViT-B-32 and ViT-L-14, bf16, batch 1024, JPEG bytes end to end, with the
# per-stage breakdown).
set -uo pipefail
OUT="${OUT:-/tmp/telltale-embed-out}"
mkdir -p "$OUT"
cd "$(dirname "$0")/.."

# One wheel at a time, so a wheel that does not fit (say regex, if the machine has it) does
# not stop the others from installing.
for wheel in .whl/*.whl; do
  python3 -m pip install -q --no-index --no-deps --target /tmp/site "$wheel" >>/tmp/pip.log 2>&1 \
    || { echo "could not install $wheel:"; tail -n 3 /tmp/pip.log; }
done
export PYTHONPATH="/tmp/site:$PWD"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv \
  2>&1 || true
python3 - <<'EOF' 2>&1 | tee "$OUT/versions.txt"
import platform, torch, torchvision, PIL, numpy
print("python", platform.python_version(), "torch", torch.__version__, "torchvision",
      torchvision.__version__, "pillow", PIL.__version__, "numpy", numpy.__version__)
print("cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
try:
    import timm; print("timm", timm.__version__)
except Exception as exc:
    print("timm unavailable:", repr(exc))
import open_clip; print("open_clip", open_clip.__version__, open_clip.__file__)
EOF

# The CUDA path's tests (nvJPEG against PIL + open_clip preprocess; corrupt items); only the
# pipelines' own conftest, since the service's packages are not on this machine.
timeout -k 5 150 python3 -m pytest tests/pipelines/test_embedding.py -q -p no:cacheprovider \
  --confcutdir=tests/pipelines -o addopts="-ra" -W ignore::DeprecationWarning \
  >"$OUT/cuda_tests.txt" 2>&1
echo "cuda tests exit code $?"; tail -n 25 "$OUT/cuda_tests.txt"

# Main figures: both models, 16,384 JPEGs of 256-500 px per end-to-end run, median of 3,
# with the per-stage breakdown (each stage alone, then decode and model side by side).
timeout -k 10 170 python3 bench/embed.py --device cuda --models ViT-B-32,ViT-L-14 \
  --n 16384 --unique 1024 --batch-size 1024 --random-init --repeat 3 --warmup 3 \
  --min-seconds 2 --min-iters 5 --time-budget 140 --breakdown --out "$OUT/embed.json" \
  >/dev/null 2>"$OUT/embed.stderr"
echo "main run exit code $?"

grep -v "No pretrained weights" "$OUT/embed.stderr" | tail -n 20
cat "$OUT/embed.json" 2>/dev/null || echo "no embed.json"
