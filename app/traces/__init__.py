"""Reading ingested traces back: the trace list and one trace with its steps and scores."""
