"""Reductions ops."""
