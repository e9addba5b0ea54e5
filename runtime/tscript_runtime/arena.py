"""THE memory planner: where buffers go in one arena so that buffers alive at the same time never
share memory. The whole-graph entry places every call's intermediates with it (graph_entry.py, once
per input signature, with the real sizes), and the compiler's memory-plan report
(tscript/ir/passes/memory_plan.py) runs it on a graph's static sizes, so the report describes the
arena the native code really uses.

A buffer is (bytes, first step, last step): defined by its first step and read up to its last one.
Buffers are placed in order of their first step, each at the lowest offset where it fits between the
buffers still alive then (first fit); a buffer alive at a step never shares memory with a buffer
defined by it, so a step's outputs never overlap its inputs. Offsets are aligned to ALIGN bytes.
"""
from __future__ import annotations

ALIGN = 64


def place(buffers: list) -> tuple[list, int]:
    """(offset of each buffer, bytes of the arena) for `buffers`, a list of (bytes, first, last)."""
    order = sorted(range(len(buffers)), key=lambda k: buffers[k][1])
    offsets = [0] * len(buffers)
    live: list = []  # (offset, size, last step), sorted by offset
    top = 0
    for k in order:
        nbytes, first, last = buffers[k]
        live = [block for block in live if block[2] >= first]
        size = -(-max(nbytes, 1) // ALIGN) * ALIGN
        offsets[k] = _first_fit(live, size)
        live.append((offsets[k], size, last))
        live.sort()
        top = max(top, offsets[k] + size)
    return offsets, top


def _first_fit(live: list, size: int) -> int:
    at = 0
    for offset, length, _ in live:
        if offset - at >= size:
            return at
        at = max(at, offset + length)
    return at
