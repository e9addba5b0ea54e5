"""Pooling modules."""

__all__: list = []
