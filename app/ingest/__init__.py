"""Ingestion: validate native events, write them idempotently in bounded transactions."""
