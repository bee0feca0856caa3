"""Scores from the ecosystem: the feedback API and per-project score roles."""
