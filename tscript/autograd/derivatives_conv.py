"""Derivative rows for the conv ops (same table and conventions as derivatives.py)."""
from .derivatives import call, derivative  # noqa: F401
