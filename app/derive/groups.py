"""Approximate input identity: near-duplicate inputs (paraphrases) in one input group.

An agent's distinct inputs (input hashes) are grouped by their MiniLM input embeddings: a
new input joins the *oldest* group whose leader (first input) has cosine >= ``threshold``
with it, else it leads a new group keyed by its own hash. The oldest match, not the best:
groups only gain members, and an input's group is stored the first time it is seen
(``input_groups``), so every later run of the same input lands in the same group whatever
groups appear later. Inputs are taken in the order the job derives them (trace start time
within a batch). This is the one-pass "leader" clustering of Hartigan (1975, *Clustering
Algorithms*, ch. 3): no re-assignment, deterministic for a given order.

A trace's group is its attribute ``telltale.input_group``; FM-3 groups repeated runs by it
when present (:mod:`detectors.output_drift`). Only the newest :data:`MAX_GROUPS` leaders of
an agent are compared with (a bounded matrix product per batch).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

import numpy as np
from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from app.models.base import utcnow
from app.models.derive import InputGroup

INPUT_GROUP = "telltale.input_group"
MAX_GROUPS = 20_000


@dataclass
class AgentGroups:
    """One agent's leaders (keys in creation order, unit vectors as rows) and the groups
    of the inputs seen so far."""

    leaders: list[str] = field(default_factory=list)
    vectors: np.ndarray | None = None
    known: dict[str, str] = field(default_factory=dict)
    new: list[tuple[str, str, np.ndarray | None]] = field(default_factory=list)

    def assign(self, input_hash: str, vector: np.ndarray, *, threshold: float) -> str:
        """The group of an input with this hash and unit embedding."""
        group = self.known.get(input_hash)
        if group is not None:
            return group
        if self.vectors is not None and self.vectors.shape[1] == vector.shape[0]:
            close = np.flatnonzero(self.vectors @ vector >= threshold)
            if close.size:
                group = self.leaders[int(close[0])]
                self.known[input_hash] = group
                self.new.append((input_hash, group, None))
                return group
        row = np.asarray(vector, dtype=np.float32)[None, :]
        self.vectors = row if self.vectors is None else np.vstack([self.vectors, row])
        self.leaders.append(input_hash)
        self.known[input_hash] = input_hash
        self.new.append((input_hash, input_hash, row[0]))
        return input_hash


def load_groups(
    conn: Connection, *, project_id: int, agent: str, input_hashes: Collection[str]
) -> AgentGroups:
    """The agent's newest leaders, oldest first, and the groups of ``input_hashes``."""
    where = (InputGroup.project_id == project_id, InputGroup.agent == agent)
    rows = conn.execute(
        select(InputGroup.group_key, InputGroup.dim, InputGroup.vector)
        .where(*where, InputGroup.vector.is_not(None))
        .order_by(InputGroup.id.desc())
        .limit(MAX_GROUPS)
    ).all()[::-1]
    out = AgentGroups()
    if rows:
        dim = rows[-1].dim
        kept = [r for r in rows if r.dim == dim]  # a changed encoder starts afresh
        out.leaders = [r.group_key for r in kept]
        out.vectors = np.frombuffer(b"".join(r.vector for r in kept), "<f4").reshape(-1, dim)
    hashes = sorted(input_hashes)
    for start in range(0, len(hashes), 500):
        chunk = hashes[start : start + 500]
        out.known.update(
            conn.execute(
                select(InputGroup.input_hash, InputGroup.group_key).where(
                    *where, InputGroup.input_hash.in_(chunk)
                )
            ).all()
        )
    return out


def save_new_groups(conn: Connection, *, project_id: int, groups: dict[str, AgentGroups]) -> None:
    """Store the inputs first seen in this batch (leaders with their vector)."""
    now = utcnow()
    rows = [
        {
            "project_id": project_id,
            "agent": agent,
            "input_hash": input_hash,
            "group_key": group,
            "dim": None if vector is None else int(vector.shape[0]),
            "vector": None if vector is None else vector.astype("<f4").tobytes(),
            "created_at": now,
        }
        for agent, g in groups.items()
        for input_hash, group, vector in g.new
    ]
    if rows:
        dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
        conn.execute(dialect.insert(InputGroup).on_conflict_do_nothing(), rows)
    for g in groups.values():
        g.new.clear()
