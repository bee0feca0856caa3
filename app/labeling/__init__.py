"""Labeling queues: filled by the active-learning selector, worked by annotators with leases."""
