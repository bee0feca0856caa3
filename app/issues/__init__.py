"""Failure issues (#53): every failure of a trace, found at derive time, grouped the way
Sentry groups exceptions into issues that persist with states a team acts on.

Downhill: :mod:`.record` (the derive job's write: events, issues, counts, in its
transaction) → :mod:`.grouping` (fingerprints) → :mod:`.templates` (Drain, the message
templates) and :mod:`.failures` (a trace's failure events). Reading: :mod:`.store`
(queries), :mod:`.states` (the state read from status and times).
"""
