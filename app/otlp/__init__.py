"""OTLP/HTTP trace ingestion: decode, map to Telltale rows, write."""
