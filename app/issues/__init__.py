"""Failure issues (#53): every failure of a trace, found at derive time, grouped the way
Sentry groups exceptions into issues that persist with states a team acts on.

Downhill: :mod:`.record` (the derive job's write: events, issues, counts, in its
transaction) → :mod:`.grouping` (fingerprints) → :mod:`.templates` (Drain, the message
templates); :mod:`.failures` is the event type the derive job fills
(:mod:`app.derive.failure_events` finds a trace's failures: this package never reads a
trace). Reading: :mod:`.store` and :mod:`.detail` (queries), :mod:`.states` (the state
read from status and times), :mod:`.labeling` (examples to a labeling queue).
"""
