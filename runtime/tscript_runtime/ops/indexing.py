"""Indexing ops."""
