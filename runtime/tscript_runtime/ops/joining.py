"""Joining ops."""
