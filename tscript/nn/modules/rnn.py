"""Rnn modules."""

__all__: list = []
