"""Transformer modules."""

__all__: list = []
