"""Conv functions of nn.functional."""

__all__: list = []
