"""Derivative rows for the nn ops (same table and conventions as derivatives.py)."""
from .derivatives import call, derivative  # noqa: F401
