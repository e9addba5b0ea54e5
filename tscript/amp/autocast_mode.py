"""`autocast`: mixed precision regions, as `torch.amp.autocast`.

tscript has no reduced-precision CPU kernels to cast to, so inside an enabled region every op keeps
its inputs' dtype (PyTorch would run matmuls and convolutions in bfloat16). The region itself is
kept: `is_autocast_enabled("cpu")` is True inside, arguments are checked as PyTorch checks them,
and asking for an accelerator disables it with PyTorch's warning.
"""
from __future__ import annotations

import functools
import threading
import warnings

from .._device import DEVICE_TYPES

__all__ = ["autocast", "custom_bwd", "custom_fwd", "get_autocast_cpu_dtype", "get_autocast_dtype",
           "get_autocast_gpu_dtype", "is_autocast_available", "is_autocast_cpu_enabled", "is_autocast_enabled"]

_DEFAULT_DTYPE = {"cpu": "bfloat16", "cuda": "float16", "xpu": "bfloat16", "mps": "float16"}
_CPU_DTYPES = ("bfloat16", "float16")


class _State(threading.local):
    def __init__(self):
        self.enabled: dict = {}   # device type -> is an autocast region open on it?


_state = _State()


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast can run on `device_type` (the CPU only, here)."""
    return device_type == "cpu"


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """True inside an enabled `autocast(device_type)` region (no argument: CUDA, as in PyTorch)."""
    return _state.enabled.get(device_type or "cuda", False)


def get_autocast_dtype(device_type: str):
    """The dtype autocast would cast to on `device_type` (its default: bfloat16 on the CPU), by name when
    tscript has no such dtype."""
    from .. import _dtype
    name = _DEFAULT_DTYPE.get(device_type, "float16")
    return getattr(_dtype, name, name)


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"torch.{old}() is deprecated. Please use torch.{new} instead.", DeprecationWarning, stacklevel=3)


def get_autocast_cpu_dtype():
    """Deprecated spelling of `get_autocast_dtype("cpu")`."""
    _deprecated("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def get_autocast_gpu_dtype():
    """Deprecated spelling of `get_autocast_dtype("cuda")`."""
    _deprecated("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def is_autocast_cpu_enabled() -> bool:
    """Deprecated spelling of `is_autocast_enabled("cpu")`."""
    _deprecated("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


class autocast:
    """`with autocast("cpu"):` or `@autocast("cpu")`: a mixed-precision region (see the module docstring:
    ops keep their dtypes in tscript)."""

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled: bool | None = None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if device_type not in DEVICE_TYPES:
            raise RuntimeError(f"Expected one of {', '.join(DEVICE_TYPES)} device type at start of device string: "
                               f"{device_type}")
        self.device = device_type
        self.fast_dtype = dtype if dtype is not None else get_autocast_dtype(device_type)
        self._enabled = bool(enabled)
        self._cache_enabled = cache_enabled
        if self._enabled and device_type == "cuda":
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", UserWarning,
                          stacklevel=2)
            self._enabled = False
        elif self._enabled and device_type != "cpu":
            warnings.warn(f"User provided device_type of '{device_type}', but {device_type} is not available. "
                          f"Disabling autocast.", UserWarning, stacklevel=2)
            self._enabled = False
        elif self._enabled and getattr(self.fast_dtype, "name", self.fast_dtype) not in _CPU_DTYPES:
            warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling autocast.\nCPU "
                          "Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.", UserWarning,
                          stacklevel=2)
            self._enabled = False
        self._previous: list = []

    def __enter__(self) -> "autocast":
        self._previous.append(_state.enabled.get(self.device, False))
        _state.enabled[self.device] = self._enabled
        return self

    def __exit__(self, *exc) -> bool:
        _state.enabled[self.device] = self._previous.pop()
        return False

    def __call__(self, fn):
        """As a decorator: `fn` runs inside this region."""
        @functools.wraps(fn)
        def in_region(*args, **kwargs):
            previous = _state.enabled.get(self.device, False)
            _state.enabled[self.device] = self._enabled
            try:
                return fn(*args, **kwargs)
            finally:
                _state.enabled[self.device] = previous
        return in_region


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorator for a custom `autograd.Function.forward` under autocast: runs it as it is (nothing is cast)."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)
    return fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorator for a custom `autograd.Function.backward` under autocast: runs it as it is."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    return bwd
