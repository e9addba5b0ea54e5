"""tscript.backends.opt_einsum: tscript's `einsum` does not use the opt_einsum package; the flags are
kept with PyTorch's values for when it is not installed."""

enabled = False
strategy = None


def is_available() -> bool:
    return False


def get_opt_einsum():
    return None
