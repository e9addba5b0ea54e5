"""Normalization modules."""

__all__: list = []
