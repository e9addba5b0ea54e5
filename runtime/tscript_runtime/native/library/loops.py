"""Counted loops and loop nests for llvmlite builders, in the canonical form LLVM's vectorizer wants
(LLVM_NOTES.md: guarded entry, i64 induction phi, `add nuw nsw` increment)."""
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


@contextmanager
def claimed(b: ir.IRBuilder, fn: ir.Function, first, last, grain, counter, name: str):
    """`for (start, stop) in chunks of [first, last)` around the body built inside the `with`: the
    chunks of `grain` one claims by atomically adding `grain` to the i64 at `counter` (start: first +
    its old value) until none is left, so that calls sharing one counter (zero at first) split the
    range between them, each chunk to whichever call is free first; the whole range at once when
    `counter` is null."""
    local = b.alloca(I64)
    b.store(I64(0), local)
    alone = b.icmp_unsigned("==", counter, ir.Constant(counter.type, None))
    counter = b.select(alone, local, counter)
    grain = b.select(alone, b.sub(last, first), smax(b, grain, I64(1)))
    claim, body, done = (fn.append_basic_block(f"{name}.{part}") for part in ("claim", "body", "done"))
    b.branch(claim)
    b.position_at_end(claim)
    start = b.add(first, b.atomic_rmw("add", counter, grain, "monotonic"))
    b.cbranch(b.icmp_signed("<", start, last), body, done)
    b.position_at_end(body)
    yield start, smin(b, b.add(start, grain), last)
    b.branch(claim)
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


def loop(b: ir.IRBuilder, fn: ir.Function, n, body, name: str, initial=None):
    """`for i in range(n)`, its content emitted by `body(i, acc)`. With `initial`, `acc` is a value
    threaded through the iterations (a reduction accumulator: `body` returns its next value), and
    its final value is returned."""
    if initial is None:
        with counted(b, fn, I64(0), n, 1, name) as i:
            body(i, None)
        return None
    return carried(b, fn, I64(0), n, 1, name, [initial], lambda i, acc: [body(i, acc[0])])[0]


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


def smin(b: ir.IRBuilder, x, y):
    """The smaller of two signed integers."""
    return b.select(b.icmp_signed("<", x, y), x, y)


def smax(b: ir.IRBuilder, x, y):
    """The larger of two signed integers."""
    return b.select(b.icmp_signed(">", x, y), x, y)


def stack(b: ir.IRBuilder, ty, values: list):
    """An array of `values` (of type `ty`) on the stack."""
    at = b.alloca(ty, I64(len(values)))
    for i, v in enumerate(values):
        b.store(v, b.gep(at, [I64(i)]))
    return at


def zeros(ty) -> ir.Constant:
    """The all-zero constant of `ty`, written `zeroinitializer` (llvmlite spells out every lane of a
    vector: the packed GEMM's IR was half such constants, and printing and parsing it took ~0.3 s)."""
    return _formatted(ty, "zeroinitializer")


def splat(b: ir.IRBuilder, x, vec: ir.VectorType):
    """A `vec` of copies of scalar x."""
    undef = _formatted(vec, "undef")
    v = b.insert_element(undef, x, ir.IntType(32)(0))
    return b.shuffle_vector(v, undef, ir.Constant(ir.VectorType(ir.IntType(32), vec.count), [0] * vec.count))


def _formatted(ty, text: str) -> ir.Constant:
    constant = ir.FormattedConstant(ty, text)
    constant.constant = text  # (the constructor spreads a string over a vector's lanes)
    return constant
