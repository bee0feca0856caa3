"""Agent profiles and the seeded geometry of a scenario world.

A *world* is everything about a scenario that does not change over time: the agents, their
versions, their intent pools (what users ask, with a popularity, a task type, a difficulty
and each version's usual decision), the eval set, and the embedding geometry (topic
centroids, intent vectors, decision centroids). It is derived from the seed alone, so a
clean run and an injected run of the same seed share it exactly.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

TOOLS = ("search", "db_query", "calculator", "http_fetch")
# Median latency in seconds of each tool call.
TOOL_LATENCY_S = {"search": 0.4, "db_query": 0.08, "calculator": 0.01, "http_fetch": 0.8}
ENTRY_POINTS = ("api", "chat_ui", "batch")
ENTRY_WEIGHTS = (0.5, 0.35, 0.15)


@dataclass(frozen=True)
class AgentProfile:
    name: str
    versions: tuple[str, ...]
    version_weights: tuple[float, ...]
    new_version: str  # the release FM-5 rolls out
    task_types: tuple[str, ...]
    decisions: tuple[str, ...]  # decisions[0] is the one FM-7 collapses onto
    tools: tuple[str, ...]
    traffic: float  # relative share of traffic


DEFAULT_PROFILES: dict[str, AgentProfile] = {
    p.name: p
    for p in (
        AgentProfile(
            "support-agent",
            ("1.4.0", "1.4.1"),
            (0.7, 0.3),
            "1.5.0",
            ("refund", "shipping", "account", "technical"),
            ("resolve", "refund", "escalate", "ask_clarification", "close"),
            ("search", "db_query", "http_fetch"),
            0.5,
        ),
        AgentProfile(
            "research-agent",
            ("2.1.0", "2.2.0"),
            (0.8, 0.2),
            "2.3.0",
            ("literature", "summarise", "compare"),
            ("answer", "answer_with_caveats", "insufficient_evidence", "refuse"),
            ("search", "http_fetch", "calculator"),
            0.3,
        ),
        AgentProfile(
            "billing-agent",
            ("0.9.2",),
            (1.0,),
            "0.10.0",
            ("invoice", "dispute", "plan_change"),
            ("approve", "deny", "escalate", "partial_credit"),
            ("db_query", "calculator", "http_fetch"),
            0.2,
        ),
    )
}
DEFAULT_AGENTS = tuple(DEFAULT_PROFILES)


def profile_for(name: str) -> AgentProfile:
    """The built-in profile of ``name``, or a generic one for an unknown agent name."""
    if name in DEFAULT_PROFILES:
        return DEFAULT_PROFILES[name]
    return AgentProfile(
        name,
        ("1.0.0", "1.1.0"),
        (0.6, 0.4),
        "1.2.0",
        ("lookup", "transform", "answer"),
        ("answer", "clarify", "escalate", "refuse"),
        TOOLS,
        0.3,
    )


def stable_int(*parts: object) -> int:
    """A platform-independent 64-bit integer from ``parts`` (for seeding sub-streams)."""
    digest = hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


@dataclass(frozen=True)
class AgentWorld:
    """The fixed geometry and answer key of one agent in one scenario."""

    profile: AgentProfile
    popularity_cdf: list[float]  # over the regular intent pool (Zipf)
    version_cdf: list[float]
    eval_intents: np.ndarray  # indices into the regular pool
    intent_vecs: np.ndarray  # (n_regular + n_novel, dim); novel intents come last
    n_regular: int
    task_type: list[str]  # per intent
    p_correct: list[float]  # per intent
    usual: dict[str, list[int]]  # version -> per-intent usual decision index
    chat_alt: list[int]  # per intent: the answer chat_ui drifts to under FM-3
    collapse_u: list[float]  # per intent: collapses under FM-7 when below the strength
    decision_vecs: np.ndarray  # (n_decisions, dim)

    def input_hash(self, intent: int) -> str:
        return hashlib.blake2b(f"{self.profile.name}:{intent}".encode(), digest_size=8).hexdigest()


def build_agent_world(
    seed: int, profile: AgentProfile, dim: int, n_regular: int = 150, n_novel: int = 60
) -> AgentWorld:
    rng = np.random.default_rng(stable_int("world", seed, profile.name))
    n_topics, n_dec = 6, len(profile.decisions)
    topics = _unit(rng.standard_normal((n_topics + 1, dim)))  # the last one is novel
    topic_of = np.concatenate([rng.integers(0, n_topics, n_regular), np.full(n_novel, n_topics)])
    noise = rng.standard_normal((n_regular + n_novel, dim)) / np.sqrt(dim)
    intent_vecs = _unit(topics[topic_of] + 0.6 * noise)
    ranks = np.arange(1, n_regular + 1, dtype=float)
    weights = 1.0 / ranks**1.05
    popularity_cdf = np.cumsum(weights / weights.sum())
    others = rng.choice(np.arange(15, n_regular), size=25, replace=False)
    eval_intents = np.concatenate([np.arange(15), others])
    n_all = n_regular + n_novel
    p_correct = np.clip(rng.beta(2.5, 1.0, n_all), 0.1, 0.99)
    # Usual decisions are skewed towards the first categories, as routing outputs are.
    dec_p = 1.0 / np.arange(1, n_dec + 1)
    dec_p /= dec_p.sum()
    usual = {}
    for version in (*profile.versions, profile.new_version):
        usual[version] = rng.choice(n_dec, size=n_all, p=dec_p).tolist()
    chat_alt = rng.integers(0, n_dec, n_all).tolist()
    task_types = profile.task_types
    return AgentWorld(
        profile=profile,
        popularity_cdf=popularity_cdf.tolist(),
        version_cdf=(np.cumsum(profile.version_weights) / sum(profile.version_weights)).tolist(),
        eval_intents=eval_intents,
        intent_vecs=intent_vecs.astype(np.float32),
        n_regular=n_regular,
        task_type=[task_types[int(k) % len(task_types)] for k in topic_of],
        p_correct=p_correct.tolist(),
        usual=usual,
        chat_alt=chat_alt,
        collapse_u=rng.random(n_all).tolist(),
        decision_vecs=_unit(rng.standard_normal((n_dec, dim))).astype(np.float32),
    )


def build_worlds(seed: int, agents: Sequence[str], dim: int) -> list[AgentWorld]:
    return [build_agent_world(seed, profile_for(name), dim) for name in agents]
