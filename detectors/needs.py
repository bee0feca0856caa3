"""What a detector reads, by name: the vocabulary of each detector's ``needs`` tuple.

A detector declares ``needs`` (a tuple of these names) so that the engine loads only what
it reads (embeddings are the expensive part) and so that a monitor page can say what a
project does not send. A detector runs with part of its needs missing: the sub-tests
that read a missing one are left out, and with none left the result is
``insufficient_data``. The conventions behind each name are in :mod:`detectors.records`.

>>> sorted(NEEDS)[:3]
['arrivals', 'confidence', 'counterfactual_runs']
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

NEEDS: Mapping[str, str] = MappingProxyType(
    {
        "steps": "each trace's spans in step order, with status, error_type or correct=false",
        "step_confidence": "the confidence of each step (span attribute confidence)",
        "tool_steps": (
            "tool and retrieval spans (kind tool/retrieval, or a tool_name) with their "
            "latency and result attributes (partial, stale, result_count)"
        ),
        "input_hash": "the input identity of a trace: repeated runs of the same input",
        "entry_point": "the entry point a trace came in by (same intent, other entry points)",
        "decision": "the trace attribute decision: the categorical final answer",
        "confidence": "the trace attribute confidence (else the last step's)",
        "true_scores": "ground-truth labels: scores of kind true from delayed or human sources",
        "proxy_scores": "scores of kind proxy (thumbs-up, CSAT, ...)",
        "eval_traces": "traces with source eval beside the production traces, per version",
        "counterfactual_runs": "traces whose counterfactual_of names a baseline run",
        "input_embedding": "the <agent>.input embedding of a trace (joined on trace_id)",
        "output_embedding": "the <agent>.output embedding of a trace (joined on trace_id)",
        "stream_embeddings": "the vectors of the embedding streams a monitor selects (FM-6)",
        "failure_issues": (
            "failure issues: per issue, the traces its failure events hit and its agent's "
            "traces, per window (ISSUES: counted by the service from failed spans and loops)"
        ),
        "arrivals": (
            "arrival counts per agent, stream and score name, now and at their usual level "
            "(SILENCE: counted by the service, never loaded as records)"
        ),
    }
)

# The span attributes read from stored spans: by detectors from ``Step.attributes``
# (step_error, tool results) and by ``records.from_rows`` for the tool calls an LLM step
# requested (detectors/requested_tools.py). Monitor windows load only these keys of each
# span's attributes: real instrumentations put prompts and completions there, which no
# detector reads. A detector that reads another key adds it here.
STEP_ATTRIBUTES = (
    "correct", "error_type", "result_count", "partial", "stale",
    "telltale.tool_calls.requested", "telltale.tool_calls.results",
)  # fmt: skip
# The needs that make a detector read embedding streams instead of traces.
STREAM_NEEDS = frozenset({"stream_embeddings"})
# The needs that make a detector read arrival counts instead of traces (SILENCE).
COUNT_NEEDS = frozenset({"arrivals"})
# The need that makes a detector read failure-issue counts instead of traces (ISSUES).
ISSUE_NEEDS = frozenset({"failure_issues"})
# The needs that make trace windows carry per-trace embeddings.
TRACE_EMBEDDING_NEEDS = frozenset({"input_embedding", "output_embedding"})
# The need of an alert rule (detectors/rules): its metric per bucket, read from the rollups
# the service keeps, not from traces or streams.
ROLLUP_NEEDS = frozenset({"rollups"})
