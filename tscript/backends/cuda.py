"""tscript.backends.cuda: CUDA's flags with PyTorch's defaults; CUDA is not built in."""

__all__ = ["enable_flash_sdp", "enable_math_sdp", "enable_mem_efficient_sdp", "flash_sdp_enabled", "is_built",
           "math_sdp_enabled", "matmul", "mem_efficient_sdp_enabled"]


class _MatmulFlags:
    """`torch.backends.cuda.matmul`: reduced-precision switches for CUDA matmuls."""

    def __init__(self):
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True

    def __repr__(self) -> str:
        return f"<tscript.backends.cuda.matmul allow_tf32={self.allow_tf32}>"


matmul = _MatmulFlags()
_sdp = {"flash": True, "mem_efficient": True, "math": True}


def is_built() -> bool:
    """False: tscript has no CUDA."""
    return False


def enable_flash_sdp(enabled: bool) -> None:
    _sdp["flash"] = bool(enabled)


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _sdp["mem_efficient"] = bool(enabled)


def enable_math_sdp(enabled: bool) -> None:
    _sdp["math"] = bool(enabled)


def flash_sdp_enabled() -> bool:
    return _sdp["flash"]


def mem_efficient_sdp_enabled() -> bool:
    return _sdp["mem_efficient"]


def math_sdp_enabled() -> bool:
    return _sdp["math"]
