"""Conv modules."""

__all__: list = []
