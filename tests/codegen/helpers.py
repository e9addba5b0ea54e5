"""Shared by the codegen tests: compiling functions natively (and checking the native path is really
taken), random arrays of every claimed dtype in contiguous and strided layouts, and comparing
compiled outputs with eager tscript (the op library's reference kernels)."""
import numpy as np
from hypothesis import strategies as st

import tscript as ts
from tscript.ir.passes.fuse import GROUP, ROW_GROUP

from tests.conftest import assert_close

DTYPES = {"float32": ts.float32, "float64": ts.float64, "int64": ts.int64, "int32": ts.int32, "bool": ts.bool}
LAYOUTS = ("contiguous", "transposed", "sliced")


def compile_native(fn, examples, dynamic=None, min_groups=1):
    """`tscript.jit.compile(fn)`, asserting that at least `min_groups` fusion/row groups got a kernel."""
    cm = ts.jit.compile(fn, examples, dynamic=dynamic)
    assert len(native_groups(cm.graph)) >= min_groups, f"no native kernels in:\n{cm.graph}"
    return cm


def native_groups(graph) -> list:
    """The FusionGroup/RowGroup nodes of `graph` that carry a generated kernel."""
    return [n for n in graph.all_nodes() if n.kind in (GROUP, ROW_GROUP) and "kernel" in n.attrs]


def unfused(graph, kinds) -> list[str]:
    """Kinds from `kinds` still present as plain nodes at the top level (not inside a group)."""
    return [n.kind for n in graph.nodes if n.kind in kinds]


def values(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
    """Random values of `dtype`: normal floats (scaled), small ints (division by zero included), bools."""
    if dtype.startswith("float"):
        return (rng.standard_normal(shape) * 3).astype(dtype)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    return rng.integers(-5, 6, shape).astype(dtype)


def laid_out(a: np.ndarray, layout: str) -> np.ndarray:
    """The same values as `a`, stored contiguously, transposed (reversed axes) or every other column."""
    if layout == "transposed":
        return np.ascontiguousarray(a.transpose()).transpose()
    if layout == "sliced":
        big = np.zeros(a.shape[:-1] + (2 * a.shape[-1] + 1,), a.dtype) if a.ndim else a.reshape(1)
        if not a.ndim:
            return a.copy()
        big[..., 1::2] = a
        return big[..., 1::2]
    return a.copy()


# inner sizes that reach the vectorized loop body (16 floats a vector, interleaved) and its remainder
INNER_SIZES = (0, 1, 2, 3, 17, 67, 131)


@st.composite
def shapes(draw, rank: int, max_size: int = 4):
    """A shape of `rank` dims: outer dims 0..max_size, the last one from INNER_SIZES."""
    outer = draw(st.lists(st.integers(0, max_size), min_size=rank - 1, max_size=rank - 1)) if rank else []
    return tuple(outer) + ((draw(st.sampled_from(INNER_SIZES)),) if rank else ())


@st.composite
def broadcast_shapes(draw, n: int, rank: int):
    """`n` shapes of `rank` dims that broadcast together (dims of size 0, 1 and broadcast 1s included)."""
    full = draw(shapes(rank))
    return [tuple(d if draw(st.booleans()) else 1 for d in full) for _ in range(n)]


def check_outputs(got, expected, labels, rtol=1e-5, atol=1e-6) -> None:
    """Compare tuples of outputs, collecting every failing label in one assertion."""
    got = got if isinstance(got, tuple) else (got,)
    expected = expected if isinstance(expected, tuple) else (expected,)
    assert len(got) == len(expected) == len(labels)
    failures = []
    for label, g, e in zip(labels, got, expected):
        try:
            assert_close(g, e, rtol=rtol, atol=atol)
        except AssertionError as err:
            failures.append(f"{label}: {str(err).strip()[:400]}")
    assert not failures, "\n".join(failures)


def link_module(module, exports: list):
    """An llvmlite module compiled for this host and linked (for tests of hand-built kernels)."""
    from tscript_runtime.native.link import NativeLibrary, imports_of
    from tscript_runtime.native.target import optimize_and_emit
    obj = optimize_and_emit(str(module))
    return NativeLibrary(obj, exports, imports_of(module, obj))
