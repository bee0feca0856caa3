"""Failure messages reduced to templates by Drain (He et al., ICWS 2017), via ``drain3``.

"Error: reservation ZFA04Y not found" and "Error: reservation 8JX2WO not found" are one
template, "Error: reservation <ID> not found": ids, numbers, dates and hex are masked
first (:data:`MASKS`), then Drain's fixed-depth prefix tree (token count, first token)
finds the cluster whose tokens match at least ``sim_th`` of the message's and widens
its template with ``<*>`` where they differ. A message is cut to its first line and
:data:`MAX_MESSAGE_CHARS`: a tool's 50 kB result is no error message, and Drain's cost
grows with the tokens.

Drain's parameters are not drain3's defaults (depth 4, ``sim_th`` 0.4, tuned on system
logs): error messages are short and one word changes the failure ("reservation <ID> not
found" vs "... is locked"), so the tree looks at the first two tokens (depth 5) and a
message joins a cluster when 70 % of its tokens match. On bench/issues_grouping.py's 40
seeded error shapes the defaults found 13 templates at purity 0.32; these find the 40 at
purity 1.0, and τ-bench airline's real failures group the same under both.

A cluster's id is its template id. The clusters are persisted per project
(``failure_templates``) and rebuilt by :meth:`FailureTemplates.restore` into the same
prefix tree, so the ids, and so the issues, are the same after a restart; a cluster whose
template widens keeps its id (its issue's title follows).

>>> book = FailureTemplates()
>>> a = book.add("Error: reservation ZFA04Y not found")
>>> b = book.add("Error: reservation 8JX2WO not found")
>>> a == b, book.template(a)
(True, 'Error: reservation <ID> not found')
>>> again = FailureTemplates.restore(book.rows())
>>> again.add("Error: reservation Q1W2E3 not found") == a
True
"""

from __future__ import annotations

from collections.abc import Iterable

from drain3.drain import LogCluster
from drain3.masking import MaskingInstruction
from drain3.template_miner import TemplateMiner
from drain3.template_miner_config import TemplateMinerConfig

MAX_MESSAGE_CHARS = 300
DEPTH = 5
SIM_TH = 0.7
# Clusters kept per project, least recently matched evicted first (drain3's LRU): memory
# stays bounded when messages do not template (a tool's whole result as its message). A
# message of an evicted cluster starts a new one, so a new issue: a split, not a loss.
MAX_TEMPLATES = 10_000
MAX_TEMPLATE_CHARS = 1000
# Masked before Drain sees the message, in this order (each pattern sees the last's output).
MASKS = (
    (r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b", "UUID"),
    (
        r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b",
        "TIME",
    ),  # fmt: skip
    (r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b", "EMAIL"),
    (r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?![\w.])", "NUM"),
    (r"\b\w*\d\w*\b", "ID"),  # a word with a digit in it: an id (HAT030, gift_card_509)
)


def first_line(message: str) -> str:
    """What is mined: the first non-blank line, cut to :data:`MAX_MESSAGE_CHARS`.

    >>> first_line("\\n  Traceback: boom\\n  at line 3")
    'Traceback: boom'
    """
    for line in message.splitlines():
        if line.strip():
            return line.strip()[:MAX_MESSAGE_CHARS]
    return ""


class FailureTemplates:
    """One project's Drain clusters: :meth:`add` a message, get its template id."""

    def __init__(
        self, sim_th: float = SIM_TH, depth: int = DEPTH, max_templates: int = MAX_TEMPLATES
    ) -> None:
        config = TemplateMinerConfig()
        config.drain_sim_th = sim_th
        config.drain_depth = depth
        config.drain_max_clusters = max_templates
        config.masking_instructions = [MaskingInstruction(p, name) for p, name in MASKS]
        config.parametrize_numeric_tokens = True
        self._miner = TemplateMiner(persistence_handler=None, config=config)
        self._changed: set[int] = set()

    @classmethod
    def restore(
        cls, rows: Iterable[tuple[int, str, int]], sim_th: float = SIM_TH, depth: int = DEPTH
    ) -> FailureTemplates:
        """The clusters ``(template id, template, size)`` put back in the prefix tree in id
        order, as Drain first placed them."""
        book = cls(sim_th=sim_th, depth=depth)
        drain = book._miner.drain
        for template_id, template, size in sorted(rows):
            cluster = LogCluster(template.split(), template_id)
            cluster.size = size
            drain.id_to_cluster[template_id] = cluster
            drain.add_seq_to_prefix_tree(drain.root_node, cluster)
            drain.clusters_counter = max(drain.clusters_counter, template_id)
        return book

    def add(self, message: str) -> int:
        """The template id of ``message`` (a cluster is created or widened as needed)."""
        text = first_line(message) or "(no message)"
        result = self._miner.add_log_message(text)
        if result["change_type"] != "none":
            self._changed.add(result["cluster_id"])
        return int(result["cluster_id"])

    def template(self, template_id: int) -> str:
        """The cluster's template ("" once evicted: read it right after :meth:`add`)."""
        cluster = self._miner.drain.id_to_cluster.get(template_id)
        return "" if cluster is None else str(cluster.get_template())[:MAX_TEMPLATE_CHARS]

    def __len__(self) -> int:
        return len(self._miner.drain.id_to_cluster)

    def rows(self) -> list[tuple[int, str, int]]:
        """Every cluster as ``(template id, template, size)``, what :meth:`restore` takes."""
        return [(c.cluster_id, self.template(c.cluster_id), c.size)
                for c in list(self._miner.drain.clusters) if c is not None]  # fmt: skip

    def take_changed(self) -> list[tuple[int, str, int]]:
        """The clusters created or widened since the last call (what must be stored)."""
        found = ((i, self._miner.drain.id_to_cluster.get(i)) for i in sorted(self._changed))
        out = [(i, self.template(i), c.size) for i, c in found if c is not None]
        self._changed.clear()
        return out
