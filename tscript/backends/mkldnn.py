"""tscript.backends.mkldnn: oneDNN is not used by tscript (its kernels are its own and numpy's BLAS)."""

enabled = True


def is_available() -> bool:
    return False
