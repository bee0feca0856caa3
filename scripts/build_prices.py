"""Build app/pricing/prices.json, the shipped model price table, from LiteLLM's price list.

LiteLLM (https://github.com/BerriAI/litellm, MIT licence, Copyright (c) 2023 Berri AI) keeps
``model_prices_and_context_window.json``; its wheels ship it as
``litellm/model_prices_and_context_window_backup.json``. This script reads one or more of
those files, newest first (a model retired from the newest list keeps the last price an older
one gave), and writes the chat models of the first-party APIs (OpenAI, Anthropic, Google
Gemini, Mistral, DeepSeek, xAI) in USD per million tokens, each with its source page::

    pip download litellm==1.110.2 --no-deps --only-binary=:all: -d /tmp/l && unzip ...
    python scripts/build_prices.py --date 2026-12-05 \\
        1.110.2=/tmp/l/litellm/model_prices_and_context_window_backup.json \\
        1.80.0=/tmp/m/litellm/... 1.74.9=/tmp/o/litellm/...

Names are stored as the lookup reads them (:func:`app.pricing.table.candidates`): lower case,
without the provider prefix; a dated snapshot is kept only where its price differs from its
undated name's (``gpt-4o-2024-05-13``), and a family listed only by its snapshots, all at
one price, gets its undated name (``claude-sonnet-4``). Only the base tier is kept (no batch, flex, priority
or long-context price): what a plain API call costs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.pricing.table import undated  # noqa: E402

OUT = ROOT / "app" / "pricing" / "prices.json"
# First wins when two providers list one name: Vertex AI kept Gemini 1.5's cut prices where
# LiteLLM's Gemini API entries did not.
PROVIDERS = ("openai", "anthropic", "vertex_ai-language-models", "gemini", "mistral",
             "deepseek", "xai")  # fmt: skip
PROVIDER_PAGES = {
    "openai": "https://openai.com/api/pricing/",
    "anthropic": "https://docs.anthropic.com/en/docs/about-claude/pricing",
    "vertex_ai-language-models": "https://cloud.google.com/vertex-ai/generative-ai/pricing",
    "gemini": "https://ai.google.dev/gemini-api/docs/pricing",
    "mistral": "https://mistral.ai/pricing#api-pricing",
    "deepseek": "https://api-docs.deepseek.com/quick_start/pricing",
    "xai": "https://docs.x.ai/docs/models",
}
PROVIDER_NAMES = {"vertex_ai-language-models": "google", "gemini": "google"}
# Not text chat at a per-token price: audio, images, search, tools billed otherwise.
SKIP_WORDS = ("audio", "tts", "image", "realtime", "live", "search", "computer-use", "lyria",
              "robotics", "transcribe", "embedding", "moderation", "ft:", "deep-research",
              "container", "learnlm", "gemma", "-exp", "exp-", "medlm", "cyber", "vibe-cli",
              "customtools")  # fmt: skip
LITELLM = "https://github.com/BerriAI/litellm/blob/main/model_prices_and_context_window.json"


def per_million(value: Any) -> float | None:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    return round(float(value) * 1_000_000, 6)


def entries(path: Path, release: str) -> dict[str, dict[str, Any]]:
    """The file's chat models under their lookup names, first provider first."""
    data = json.loads(path.read_text())
    out: dict[str, dict[str, Any]] = {}
    for provider in PROVIDERS:
        for key, e in sorted(data.items()):
            if not isinstance(e, dict) or e.get("litellm_provider") != provider:
                continue
            if e.get("mode") not in ("chat", "responses"):
                continue
            name = key.split("/")[-1].lower()
            if any(w in name for w in SKIP_WORDS) or name in out:
                continue
            price_in = per_million(e.get("input_cost_per_token"))
            price_out = per_million(e.get("output_cost_per_token"))
            if not price_in or not price_out:  # free tiers and unknowns are no price
                continue
            source = e.get("source") or PROVIDER_PAGES[provider]
            if not source.startswith("https://") or any(c.isspace() for c in source):
                continue  # a note, not a price page ("no available doc...; using X's pricing")
            out[name] = {
                "provider": PROVIDER_NAMES.get(provider, provider),
                "input": price_in,
                "output": price_out,
                "cached_input": per_million(e.get("cache_read_input_token_cost")),
                "cache_write": per_million(e.get("cache_creation_input_token_cost")),
                "source": source,
                "from": f"litellm {release}",
            }
    return out


def build(files: list[tuple[str, Path]], date: str) -> dict[str, Any]:
    models: dict[str, dict[str, Any]] = {}
    for release, path in files:
        for name, e in entries(path, release).items():
            models.setdefault(name, e)
    prices = ("input", "output", "cached_input", "cache_write")

    def same(a: str, b: str) -> bool:
        return all(models[a][k] == models[b][k] for k in prices)

    groups: dict[str, list[str]] = {}
    for name in sorted(models):
        groups.setdefault(undated(name), []).append(name)
    for base, names in groups.items():
        dated = [n for n in names if n != base]
        if base not in models and dated and all(same(dated[0], n) for n in dated):
            models[base] = models[dated[0]]  # every snapshot at one price: the family's
        for name in dated:
            if base in models and same(base, name):
                del models[name]  # the undated name's price: the lookup finds it
    return {
        "version": date,
        "units": "USD per million tokens",
        "derived_from": [
            {"package": "litellm", "release": release, "url": LITELLM,
             "licence": "MIT, Copyright (c) 2023 Berri AI"}
            for release, _ in files
        ],  # fmt: skip
        "models": dict(sorted(models.items())),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--date", required=True, help="the table's version: YYYY-MM-DD")
    parser.add_argument("files", nargs="+", help="RELEASE=PATH, newest first")
    args = parser.parse_args()
    files = [(f.split("=", 1)[0], Path(f.split("=", 1)[1])) for f in args.files]
    OUT.write_text(json.dumps(build(files, args.date), indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
