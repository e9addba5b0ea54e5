"""Nn ops."""
