"""Sparse modules."""

__all__: list = []
