"""Loss modules."""

__all__: list = []
