"""The time of each step of a whole-graph entry, measured inside the native call: the graph's code built
once more with a timed entry (entry.build_entry, `timed`), which reads the CPU's cycle counter before
its first step and after each, and linked beside the untimed one (cached as its own object). A step
split over both threads is timed on the calling thread, the wait for the other half included.

Reading the counter costs a few nanoseconds a step: the timed call takes what the untimed one takes.
Counts become seconds by the counter's rate, measured against `time.perf_counter` over CALIBRATION
seconds (x86's time-stamp counter ticks at a constant rate, whatever the core's clock).
"""
from __future__ import annotations

import ctypes
import time

import numpy as np

from .emit import ENTRY, native_object
from .link import NativeLibrary

CALIBRATION = 0.02  # seconds over which the counter's rate is measured
_COUNTS = ctypes.CFUNCTYPE(ctypes.c_void_p)
_CLOCK = ctypes.CFUNCTYPE(ctypes.c_int64)


class StepClock:
    """A timed twin of an Executable's whole-graph entry: `run(args)` runs it (None where the entry
    would hand the call to the executor) and returns each step's seconds in that call."""

    def __init__(self, executable):
        plan = executable.plan
        obj, imports = native_object(executable.graph, plan, executable.text, timed=True)
        self.library = NativeLibrary(obj, [ENTRY, f"{ENTRY}_cycles", f"{ENTRY}_clock"], imports)
        self.steps = len(plan.layout.steps)
        address = _COUNTS(self.library.address(f"{ENTRY}_cycles"))()
        self._counts = np.ctypeslib.as_array(ctypes.cast(address, ctypes.POINTER(ctypes.c_int64)),
                                             (self.steps + 1,))
        self._clock = _CLOCK(self.library.address(f"{ENTRY}_clock"))
        self.entry = executable.entry.twin(self.library.address(ENTRY), self.library)
        self.seconds_per_count = self._rate()

    def _rate(self) -> float:
        c0, t0 = self._clock(), time.perf_counter()
        while time.perf_counter() - t0 < CALIBRATION:
            pass
        c1, t1 = self._clock(), time.perf_counter()
        return (t1 - t0) / max(c1 - c0, 1)

    def run(self, args: list) -> np.ndarray | None:
        """Each step's seconds in one call of the timed entry on `args` (None: the entry does not run them)."""
        if self.entry.run(args) is None:
            return None
        return np.diff(self._counts).astype(np.float64) * self.seconds_per_count
