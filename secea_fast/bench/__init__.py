"""Measurement tools behind the `secea-fast bench` commands."""
