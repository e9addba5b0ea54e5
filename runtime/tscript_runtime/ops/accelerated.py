"""Faster implementations of some op kernels, installed from above: the kernel library (`native/`)
sits above the op table and may not be imported by it, so it puts its entry points here
(`native/eager.py`) and the numpy kernels ask for them.

An accelerated function takes the kernel's normalised arguments and returns the result, or None when
it does not cover the case (a dtype, a layout, a library that cannot be built here): the numpy
reference kernel then runs. Either way the result is the same up to float rounding. One that also takes
`out=` (an elementwise op's) writes its result there for the op's in-place form (`call_into`).
"""
from __future__ import annotations

from typing import Callable

KERNELS: dict[str, Callable] = {}  # name (e.g. "conv2d") -> accelerated function
WRITES_INTO: set[str] = set()  # names whose function takes `out=` (call_into)
# elements from which the elementwise kernels (add, mul, relu) ask their accelerated function at all: a tiny
# tensor's op does not pay for the call (set by whoever installs them)
MIN_ELEMENTWISE = float("inf")
_enabled = [True]


def install(name: str, function: Callable, writes_into: bool = False) -> None:
    """Make `function` the accelerated implementation of kernel `name` (`writes_into`: it takes `out=`)."""
    KERNELS[name] = function
    (WRITES_INTO.add if writes_into else WRITES_INTO.discard)(name)


def set_enabled(on: bool) -> bool:
    """Use the accelerated implementations (True, the default) or only the numpy kernels; returns
    the previous setting (for tests comparing the two)."""
    previous, _enabled[0] = _enabled[0], bool(on)
    return previous


def call(name: str, *args):
    """The accelerated `name`'s result for `args`, or None (none installed, switched off, not covered)."""
    function = KERNELS.get(name)
    if function is None or not _enabled[0]:
        return None
    return function(*args)


def call_into(name: str, out, *args):
    """Write the accelerated `name`'s result for `args` into the array `out` (an in-place op's target):
    `out`, or None when not done (as `call`; also when `out` is not the result's shape and dtype)."""
    if name not in WRITES_INTO or not _enabled[0] or out.size < MIN_ELEMENTWISE:
        return None
    return KERNELS[name](*args, out=out)
