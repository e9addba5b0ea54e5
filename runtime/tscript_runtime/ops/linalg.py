"""Linalg ops."""
