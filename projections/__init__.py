"""Projections: DuckDB views and derived state rebuilt from the event log."""
