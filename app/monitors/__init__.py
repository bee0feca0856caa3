"""Monitors: a failure mode's detector run on a schedule over stored data windows."""
