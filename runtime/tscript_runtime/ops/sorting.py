"""Sorting ops."""
