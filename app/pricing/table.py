"""The shipped model price table and how a model name finds its price.

``prices.json`` (beside this module, in the wheel) holds USD per million input, output,
cached-input and cache-write tokens per model, each entry with the page its price comes
from, the whole table dated by its ``version`` (how it is made: ``scripts/build_prices.py``).

Instrumentations report a model as the provider names it, often a dated snapshot, sometimes
behind a router's or a cloud's prefix. :func:`candidates` gives the names tried, most
specific first: the name in lower case; without a provider prefix (``openai/gpt-4o``,
``models/gemini-2.0-flash``, Bedrock's ``us.anthropic.claude-...``); then
without its snapshot suffix (:func:`undated`: ``gpt-4o-2024-08-06`` -> ``gpt-4o``). An
exact dated entry wins over its undated name: ``gpt-4o-2024-05-13`` is priced as itself, and a suffix is taken off one at a
time (``claude-3-5-sonnet-20241022-v2:0`` finds ``claude-3-5-sonnet-20241022`` first).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

TABLE_PATH = Path(__file__).with_name("prices.json")
MAX_MODEL_CHARS = 128

# Bedrock's model ids: an optional cross-region prefix, then the vendor with a dot.
_VENDOR_DOT = re.compile(
    r"^(?:(?:us|eu|apac|global)\.)?(?:anthropic|meta|mistral|cohere|ai21|amazon|openai|google|deepseek)\."
)
# Tried one at a time until none applies: Bedrock's -v2:0 and Vertex's -v2 versions, dates
# (OpenAI -2024-08-06, Anthropic -20241022, Vertex @20241022, Google's previews -09-2025 and
# -04-17, OpenAI -0613 and Mistral -2411), Gemini's -002 and -latest aliases.
_SUFFIXES = tuple(re.compile(p) for p in (
    r"-v\d+(?::\d+)?$", r"-\d{4}-\d{2}-\d{2}$", r"[-@]\d{8}$", r"-\d{2}-\d{4}$",
    r"-\d{2}-\d{2}$", r"-\d{4}$", r"-\d{3}$", r"-latest$",
))  # fmt: skip


def snapshots(name: str) -> list[str]:
    """``name`` and each shorter name its snapshot suffixes leave, one suffix at a time.

    >>> snapshots("claude-3-5-sonnet-20241022-v2:0")
    ['claude-3-5-sonnet-20241022-v2:0', 'claude-3-5-sonnet-20241022', 'claude-3-5-sonnet']
    """
    out = [name]
    while True:
        for suffix in _SUFFIXES:
            shorter = suffix.sub("", out[-1], count=1)
            if shorter != out[-1] and shorter:
                out.append(shorter)
                break
        else:
            return out


def undated(name: str) -> str:
    """``name`` without its snapshot suffixes.

    >>> undated("gpt-4o-mini-2024-07-18"), undated("claude-3-5-sonnet-v2@20241022")
    ('gpt-4o-mini', 'claude-3-5-sonnet')
    >>> undated("gemini-1.5-pro-002"), undated("mistral-large-latest"), undated("o3")
    ('gemini-1.5-pro', 'mistral-large', 'o3')
    """
    return snapshots(name)[-1]


def bare(name: str) -> str:
    """``name`` in lower case without a provider prefix.

    >>> bare("OpenAI/GPT-4o"), bare("models/gemini-2.0-flash")
    ('gpt-4o', 'gemini-2.0-flash')
    >>> bare("us.anthropic.claude-3-5-sonnet-20241022-v2:0")
    'claude-3-5-sonnet-20241022-v2:0'
    """
    return _VENDOR_DOT.sub("", name.strip().lower().rsplit("/", 1)[-1])


def candidates(name: str) -> list[str]:
    """The names a model is looked up by, most specific first (no duplicates).

    >>> candidates("Anthropic/claude-sonnet-4-20250514")
    ['anthropic/claude-sonnet-4-20250514', 'claude-sonnet-4-20250514', 'claude-sonnet-4']
    """
    raw = name.strip().lower()
    out: list[str] = []
    for n in (raw, *snapshots(bare(raw))):
        if n and n not in out:
            out.append(n)
    return out


@dataclass(frozen=True)
class Price:
    """USD per million tokens; a cached price of None bills cached tokens as input."""

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None


@dataclass(frozen=True)
class TableEntry:
    model: str
    provider: str
    price: Price
    source: str


@dataclass(frozen=True)
class PriceTable:
    version: str
    entries: dict[str, TableEntry]
    derived_from: tuple[dict[str, Any], ...] = ()

    def find(self, model: str) -> TableEntry | None:
        """The entry of the first of the model's :func:`candidates` the table has."""
        for name in candidates(model):
            entry = self.entries.get(name)
            if entry is not None:
                return entry
        return None

    @property
    def label(self) -> str:
        """How a cost priced by this table says so (``cost_source``)."""
        return f"table {self.version}"


def parse_table(data: dict[str, Any]) -> PriceTable:
    entries = {
        name: TableEntry(
            model=name,
            provider=str(e["provider"]),
            price=Price(
                float(e["input"]), float(e["output"]), e.get("cached_input"), e.get("cache_write")
            ),  # fmt: skip
            source=str(e["source"]),
        )
        for name, e in data["models"].items()
    }
    return PriceTable(str(data["version"]), entries, tuple(data.get("derived_from", ())))


@lru_cache(maxsize=1)
def shipped_table() -> PriceTable:
    """The table shipped with this release (read once per process)."""
    return parse_table(json.loads(TABLE_PATH.read_text()))
