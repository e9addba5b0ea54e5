"""Counted loops and loop nests in LLVM IR, in the canonical form the loop vectorizer needs
(LLVM_NOTES.md): an i64 induction phi from 0, `add nuw nsw` step, the trip count checked before
the first iteration."""
from __future__ import annotations

from llvmlite import ir

I64 = ir.IntType(64)


def loop(b: ir.IRBuilder, fn: ir.Function, n, body, name: str, carried=None):
    """`for i in range(n)`, its content emitted by `body(i, acc)`. With `carried` (an initial value),
    `acc` is a value threaded through the iterations (a reduction accumulator: `body` returns its
    next value), and its final value is returned."""
    pre = b.block
    header, done = fn.append_basic_block(name), fn.append_basic_block(name + "_done")
    b.cbranch(b.icmp_signed(">", n, I64(0)), header, done)
    b.position_at_end(header)
    i = b.phi(I64, name=name + "_i")
    i.add_incoming(I64(0), pre)
    acc = None
    if carried is not None:
        acc = b.phi(carried.type, name=name + "_acc")
        acc.add_incoming(carried, pre)
    new_acc = body(i, acc)
    nxt = b.add(i, I64(1), flags=["nuw", "nsw"])
    end = b.block
    i.add_incoming(nxt, end)
    if acc is not None:
        acc.add_incoming(new_acc, end)
    b.cbranch(b.icmp_signed("<", nxt, n), header, done)
    b.position_at_end(done)
    if acc is None:
        return None
    result = b.phi(carried.type, name=name + "_result")
    result.add_incoming(carried, pre)
    result.add_incoming(new_acc, end)
    return result


def nest(b: ir.IRBuilder, fn: ir.Function, levels: list, offsets: list, name: str, inner) -> None:
    """Loops, outermost first, one per `(trip count, per-array strides)` level, each moving every
    array's element offset (`offsets`) by its stride; `inner(offsets)` emits the innermost content."""
    if not levels:
        inner(offsets)
        return
    (n, strides), rest = levels[0], levels[1:]

    def body(i, _):
        nest(b, fn, rest, [b.add(off, b.mul(i, st)) for off, st in zip(offsets, strides)], name, inner)
    loop(b, fn, n, body, name)
