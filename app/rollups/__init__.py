"""Per-bucket rollups of each project's traffic: what alert rules and their previews read.

A month at 10,000 traces/h is 7.2 M traces; a rule's preview must answer in seconds. The
rollups hold, per five-minute bucket of trace start times (:mod:`app.rollups.buckets`) and
a few dimensions, the counts a rule's metric adds up: traces, failed traces, loops, labels,
latency sketches, tokens and cost (``trace_rollups``), tool calls (``tool_rollups``), model
calls (``model_rollups``), scores (``score_rollups``) and traces per user (``user_rollups``);
what counts how: :mod:`app.rollups.facts`.

They are kept in three steps, downhill:

1. **mark** (:mod:`app.rollups.dirty`): the transactions that change a bucket's raw rows
   (the derive job's write, an ingest batch with scores, a backfill) mark it dirty;
2. **rebuild** (:mod:`app.rollups.build`): the bucket's rows are recomputed from its raw
   rows and replaced, and its mark cleared unless it moved meanwhile;
3. **job** (:mod:`app.rollups.job`): the scheduler's periodic job rebuilds the oldest
   marks first, under a time budget; ``telltale rollups backfill`` marks stored history.

Recomputing a whole bucket is simpler than applying deltas and is right however a trace
changed (a late span, a re-derivation, a delayed label); a bucket is a bounded read.
Reading them for a rule: :mod:`app.rollups.series`.
"""
