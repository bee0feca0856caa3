"""Data readiness: which of a detector's needs a monitor's window carries, and how to send the rest."""
