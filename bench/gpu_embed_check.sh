#!/usr/bin/env bash
# Embedding tests and throughput on the GPU machine, in one go, in about 7 minutes at most.
#
#   bash bench/gpu_embed_check.sh        (from the repository root, wheels in ./.whl)
#
# The machine has python3 with torch and torchvision but no open_clip: the wheels in .whl
# (open_clip_torch, ftfy, wcwidth, regex, tqdm; all --no-deps) go to /tmp/site. Writes
# $OUT/embed.json (ViT-B-32 and ViT-L-14, bf16, batch 1024, JPEG bytes end to end) and
# $OUT/embed_variant_*.json (ViT-B-32 with high-priority prepare streams; with a quarter or
# half of the JPEGs decoded by PIL), after the CUDA tests of tests/pipelines/test_embedding.py.
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

# Variants for ViT-B-32: high-priority prepare streams; a share of the JPEGs through PIL.
variant() {
  local name=$1; shift
  timeout -k 5 45 python3 bench/embed.py --device cuda --models ViT-B-32 "$@" \
    --n 16384 --unique 1024 --batch-size 1024 --random-init --repeat 3 --warmup 2 \
    --min-seconds 0.5 --min-iters 3 --time-budget 35 \
    --out "$OUT/embed_variant_$name.json" >/dev/null 2>"/tmp/embed_variant_$name.stderr"
  echo "variant $name exit code $?"
}
variant priority --prep-priority -1
variant cpushare25 --cpu-share 0.25
variant cpushare50 --cpu-share 0.5

tail -n 20 "$OUT/embed.stderr" /tmp/embed_variant_*.stderr | grep -v "No pretrained weights"
cat "$OUT/embed.json" 2>/dev/null || echo "no embed.json"
python3 - "$OUT"/embed_variant_*.json <<'EOF' 2>/dev/null || true
import json, sys
for path in sys.argv[1:]:
    for r in json.load(open(path))["results"]:
        keys = ("model", "prepare_stream_priority", "cpu_decode_share", "raw_img_per_s",
                "prep_img_per_s", "e2e_jpeg_img_per_s", "parity", "error")
        print(path.rsplit("/", 1)[-1], {k: r.get(k) for k in keys})
EOF
