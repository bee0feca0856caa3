#!/usr/bin/env bash
# Embedding throughput on the GPU machine, in one go, in about 4 minutes at most.
#
#   bash bench/gpu_embed_check.sh        (from the repository root, wheels in ./.whl)
#
# The machine has python3 with torch and torchvision but no open_clip: the wheels in .whl
# (open_clip_torch, ftfy, wcwidth, regex, tqdm; all --no-deps) go to /tmp/site. Writes
# $OUT/embed.json (ViT-B-32 and ViT-L-14, bf16, batch 1024, JPEG bytes end to end) and
# $OUT/embed_variant_*.json (ViT-B-32 on 256x256 JPEGs; ViT-B-32 with one prepare thread).
set -uo pipefail
OUT="${OUT:-/tmp/telltale-embed-out}"
mkdir -p "$OUT"
cd "$(dirname "$0")/.."

# One wheel at a time, so a wheel that does not fit (say regex, if the machine has it) does
# not stop the others from installing.
for wheel in .whl/*.whl; do
  python3 -m pip install -q --no-index --no-deps --target /tmp/site "$wheel" >>"$OUT/pip.log" 2>&1 \
    || echo "could not install $wheel (see pip.log)"
done
export PYTHONPATH="/tmp/site:$PWD"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv \
  >"$OUT/nvidia-smi.csv" 2>&1 || true
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

# Main figures: both models, 16,384 JPEGs of 256-500 px per end-to-end run, median of 3.
timeout -k 10 150 python3 bench/embed.py --device cuda --models ViT-B-32,ViT-L-14 \
  --n 16384 --unique 1024 --batch-size 1024 --random-init --repeat 3 --warmup 3 \
  --min-seconds 2 --min-iters 5 --time-budget 120 --out "$OUT/embed.json" \
  >"$OUT/embed.stdout" 2>"$OUT/embed.stderr"
echo "main run exit code $?"

# Variants for ViT-B-32, to explain the main figure: (a) every JPEG 256x256, so resizes
# batch by size and decode is the cheapest; (b) one prepare thread, no decode/resize overlap.
timeout -k 5 35 python3 bench/embed.py --device cuda --models ViT-B-32 --sides 256,256 \
  --n 16384 --unique 1024 --batch-size 1024 --random-init --repeat 2 --warmup 2 \
  --min-seconds 0.5 --min-iters 3 --time-budget 25 \
  --out "$OUT/embed_variant_256px.json" >/dev/null 2>"$OUT/embed_variant_256px.stderr"
echo "variant 256px exit code $?"
timeout -k 5 35 python3 bench/embed.py --device cuda --models ViT-B-32 --prepare-threads 1 \
  --n 8192 --unique 1024 --batch-size 1024 --random-init --repeat 2 --warmup 2 \
  --min-seconds 0.5 --min-iters 3 --time-budget 25 \
  --out "$OUT/embed_variant_1thread.json" >/dev/null 2>"$OUT/embed_variant_1thread.stderr"
echo "variant 1 prepare thread exit code $?"

tail -n 20 "$OUT/embed.stderr"
cat "$OUT/embed.json" 2>/dev/null || echo "no embed.json"
python3 - "$OUT"/embed_variant_*.json <<'EOF' 2>/dev/null || true
import json, sys
for path in sys.argv[1:]:
    for r in json.load(open(path))["results"]:
        keys = ("model", "prepare_threads", "raw_img_per_s", "prep_img_per_s",
                "e2e_jpeg_img_per_s", "error")
        print(path.rsplit("/", 1)[-1], {k: r.get(k) for k in keys})
EOF
