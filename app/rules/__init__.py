"""Alert rules a team writes: a metric over a filter, optionally grouped, with a condition,
previewed on the stored history before it is saved (issue #50).

A rule is a monitor of the ``RULE`` family (:mod:`app.rules.store`), so it runs through the
one monitor pipeline (``app/monitors/runner.py``: plan, load from the rollups, detect with
:class:`detectors.rules.detector.RuleDetector`, decide, record) and its alerts share the
lifecycle, silences, grouping and channels of every alert, one alert per group
(:func:`app.alerts.lifecycle.record_groups`). :mod:`app.rules.preview` replays an unsaved rule over up to 30
days of rollups with the same evaluation a run makes.
"""
