"""What a run decides from a detector's result: baseline windows, calibration, sequential chart, state."""
