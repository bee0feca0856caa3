"""Alerts: fingerprints and states, silences, channels and the notification outbox."""
