"""Online evaluators (issue #51): LLM judges and deterministic checks that score traces.

An evaluator (:mod:`app.models.evaluators`) selects settled traces, samples them by trace
id, and writes one score per trace and version through a queue in the database
(:mod:`app.evaluators.queue`), run by :mod:`app.evaluators.runner` within a daily budget.
What a judge is sent and how its answer is read: :mod:`app.evaluators.judge`; the checks:
:mod:`app.evaluators.checks`; the trace content both read: :mod:`app.evaluators.content`.
"""
