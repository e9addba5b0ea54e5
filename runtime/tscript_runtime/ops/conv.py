"""Conv ops."""
