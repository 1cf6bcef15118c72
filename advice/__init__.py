"""Advice: which gene or strategy to use for a set of signals, and which to avoid."""
