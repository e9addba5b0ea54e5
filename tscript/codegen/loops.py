"""Counted loops for llvmlite builders, in the canonical form LLVM's vectorizer wants (guarded entry,
i64 induction phi, `add nuw nsw` increment)."""
from __future__ import annotations

from contextlib import contextmanager

from llvmlite import ir

I64 = ir.IntType(64)


@contextmanager
def counted(b: ir.IRBuilder, fn: ir.Function, start, stop, step: int, name: str):
    """`for i in range(start, stop, step)` around the body built inside the `with`; yields i."""
    header = b.block
    body, done = fn.append_basic_block(name), fn.append_basic_block(f"{name}.done")
    b.cbranch(b.icmp_signed("<", start, stop), body, done)
    b.position_at_end(body)
    i = b.phi(I64)
    i.add_incoming(start, header)
    yield i
    nxt = b.add(i, I64(step), flags=["nuw", "nsw"])
    i.add_incoming(nxt, b.block)
    b.cbranch(b.icmp_signed("<", nxt, stop), body, done)
    b.position_at_end(done)


def carried(b: ir.IRBuilder, fn: ir.Function, start, stop, step: int, name: str, initial: list, update) -> list:
    """A counted loop carrying `initial` through `new = update(i, values)`; returns the final values
    (the initial ones when the loop does not run)."""
    header = b.block
    with counted(b, fn, start, stop, step, name) as i:
        values = [b.phi(v.type) for v in initial]
        for phi, v in zip(values, initial):
            phi.add_incoming(v, header)
        new = update(i, values)
        last = b.block
        for phi, v in zip(values, new):
            phi.add_incoming(v, last)
    results = []
    for v, value in zip(initial, new):
        phi = b.phi(v.type)
        phi.add_incoming(v, header)
        phi.add_incoming(value, last)
        results.append(phi)
    return results
