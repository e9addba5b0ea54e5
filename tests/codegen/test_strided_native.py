"""Compiled kernels on inputs of every layout give exactly numpy's values: transposed and permuted
views, broadcast and expanded (stride 0) inputs, negative strides, size-0 and size-1 dims, float32,
float64, int64 and bool, and row kernels. The launcher picks the loop order per layout
(tscript_runtime/loop_order.py: the plan is checked here as data too) and elementwise kernels read
transposed inputs in tiles transposed in registers (tscript_runtime/native/pointwise.py).

The ops are exact in floating point (x * 2 is exact, so a fused multiply-add rounds once like numpy
does), so every comparison but the row kernels' is `array_equal`. Every model is one fusion group,
called both as a model and through its kernel's launcher with the same arrays (the model may make
inputs contiguous before its kernels run). Models compile once per module (module-scope fixtures):
on contiguous examples, called with other layouts of the same shapes (any shapes where dims are
dynamic), and on a transposed example called with a contiguous input.
"""
import itertools

import numpy as np
import pytest

import tscript as ts
from tscript.codegen.plan import KERNEL_SPLIT_MIN
from tscript_runtime import kernels, loop_order
from tscript_runtime.native import target

from tests.codegen.helpers import compile_native, native_groups
from tests.conftest import assert_close

RNG = np.random.default_rng(0)


def arr(*shape, dtype="float32"):
    if dtype == "bool":
        return RNG.random(shape) < 0.5
    if dtype == "int64":
        return RNG.integers(-50, 50, shape)
    return (RNG.standard_normal(shape) * 3).astype(dtype)


def layouts(a: np.ndarray) -> dict:
    """Arrays with `a`'s values in different memory layouts (a 2-D `a`)."""
    return {"contiguous": a.copy(), "transposed": np.ascontiguousarray(a.T).T,
            "rows reversed": a[::-1].copy()[::-1], "both reversed": a[::-1, ::-1].copy()[::-1, ::-1],
            "transposed, columns reversed": np.ascontiguousarray(a.T)[::-1].T[:, ::-1],
            "every other column": np.repeat(a, 2, axis=1)[:, ::2]}


def examples(n: int, *shape, dtype="float32") -> tuple:
    """`n` distinct example tensors (one tensor passed twice would trace as one input used twice)."""
    return tuple(ts.from_numpy(arr(*shape, dtype=dtype)) for _ in range(n))


def run(cm, *arrays) -> list:
    """The compiled model's results for `arrays`: the model's own, and its one kernel's when called
    directly (a model may copy strided inputs to C order before its kernels see them, as the
    whole-graph entry does)."""
    (group,) = native_groups(cm.graph)
    inputs = list(cm.graph.inputs)
    kernel = cm.executable.launchers[group.attrs["kernel"]]
    direct = kernel(*(arrays[inputs.index(v)] for v in group.inputs))
    return [cm(*(ts.from_numpy(a) for a in arrays)).numpy(), direct]


def exact(results: list, expected: np.ndarray) -> bool:
    return all(r.dtype == expected.dtype and np.array_equal(r, expected) for r in results)


def dynamic(n_inputs: int, rank: int) -> dict:
    return {i: list(range(rank)) for i in range(n_inputs)}


@pytest.fixture(scope="module")
def scale():
    """x * 2 + 1, any 2-D float32 shape."""
    return compile_native(lambda x: x * 2 + 1, examples(1, 4, 5), dynamic=dynamic(1, 2))


@pytest.fixture(scope="module")
def add():
    """x + y, any broadcasting 2-D float32 shapes."""
    return compile_native(lambda x, y: x + y, examples(2, 4, 5), dynamic=dynamic(2, 2))


# -- 2-D: every layout and edge shape --------------------------------------------------------------------

SHAPES = [(37, 53), (64, 48), (16, 16), (17, 15), (1, 40), (40, 1), (1, 1), (0, 5), (33, 0)]


@pytest.mark.parametrize("shape", SHAPES)
def test_every_layout_of_one_input(scale, shape):
    for name, x in layouts(arr(*shape)).items():
        assert exact(run(scale, x), x * 2 + 1), name


@pytest.mark.parametrize("shape", [(37, 53), (48, 32), (1, 20)])
def test_every_pair_of_layouts(add, shape):
    xs, ys = layouts(arr(*shape)), layouts(arr(*shape))
    for (nx, x), (ny, y) in itertools.product(xs.items(), ys.items()):
        assert exact(run(add, x, y), x + y), (nx, ny)


def test_transposed_inputs_with_broadcast_and_expanded_operands(add):
    x = np.ascontiguousarray(arr(53, 37)).T  # (37, 53), unit stride along dim 0
    operands = {"row (1, 53)": arr(1, 53), "column (37, 1)": arr(37, 1), "one (1, 1)": arr(1, 1),
                "expanded row": np.broadcast_to(arr(53), (37, 53)),
                "expanded column": np.broadcast_to(arr(37, 1), (37, 53))}
    for name, y in operands.items():
        assert exact(run(add, x, y), x + y), name
        assert exact(run(add, y, x), y + x), name


# -- 3-D and 4-D permutations ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def scale3():
    return compile_native(lambda x: x * 2 + 1, examples(1, 2, 3, 4), dynamic=dynamic(1, 3))


@pytest.fixture(scope="module")
def scale4():
    return compile_native(lambda x: x * 2 + 1, examples(1, 2, 3, 4, 5), dynamic=dynamic(1, 4))


@pytest.mark.parametrize("perm", list(itertools.permutations(range(3))))
def test_permuted_3d_inputs(scale3, perm):
    x = arr(3, 20, 37).transpose(perm)
    assert exact(run(scale3, x), x * 2 + 1)


@pytest.mark.parametrize("perm", [(0, 3, 1, 2), (0, 2, 3, 1), (3, 2, 1, 0), (1, 0, 3, 2), (2, 0, 3, 1)])
def test_permuted_4d_inputs(scale4, perm):
    x = arr(2, 3, 17, 33).transpose(perm)
    assert exact(run(scale4, x), x * 2 + 1)


def test_permuted_inputs_with_size_one_dims(scale4):
    for x in (arr(1, 17, 1, 33).transpose(3, 0, 2, 1), arr(17, 1, 33, 1).transpose(2, 3, 1, 0),
              arr(5, 1, 0, 3).transpose(3, 2, 1, 0)):
        assert exact(run(scale4, x), x * 2 + 1)


# -- static shapes: broadcast dims compiled as stride 0 must not be moved --------------------------------

@pytest.mark.parametrize("bias_shape", [(20, 1), (36,), (6, 1, 1), (1, 20, 36)])
def test_static_broadcast_operands_with_permuted_inputs(bias_shape):
    cm = compile_native(lambda x, b: x * 2 + b, (ts.from_numpy(arr(6, 20, 36)), ts.from_numpy(arr(*bias_shape))))
    b = arr(*bias_shape)
    every_other = np.repeat(b, 2, axis=-1)[..., ::2]  # the same values, stride 2 along the last dim
    for perm in itertools.permutations(range(3)):
        inverse = np.argsort(perm)
        x = np.ascontiguousarray(arr(6, 20, 36).transpose(perm)).transpose(inverse)  # shape (6, 20, 36)
        assert exact(run(cm, x, b), x * 2 + b), perm
        assert exact(run(cm, x, every_other), x * 2 + b), perm


def test_compiled_on_a_transposed_example_called_with_contiguous_inputs():
    cm = compile_native(lambda x, y: x + y * 2, tuple(e.t() for e in examples(2, 40, 24)))
    x, y = arr(24, 40), arr(24, 40)
    assert exact(run(cm, x, y), x + y * 2)
    assert exact(run(cm, np.ascontiguousarray(x.T).T, y), x + y * 2)


# -- dtypes ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_other_dtypes(dtype):
    cm = compile_native(lambda x, y: x * 2 - y, examples(2, 3, 4, dtype=dtype), dynamic=dynamic(2, 2))
    for shape in [(37, 53), (8, 8), (9, 17)]:
        x, y = arr(*shape, dtype=dtype), arr(*shape, dtype=dtype)
        for (nx, xl), (ny, yl) in itertools.product(layouts(x).items(), list(layouts(y).items())[:2]):
            assert exact(run(cm, xl, yl), x * 2 - y), (shape, nx, ny)


def test_bool_inputs():
    cm = compile_native(lambda x, y: ts.logical_xor(x, y), examples(2, 3, 4, dtype="bool"), dynamic=dynamic(2, 2))
    x, y = arr(37, 53, dtype="bool"), arr(37, 53, dtype="bool")
    for name, xl in layouts(x).items():
        assert exact(run(cm, xl, y), np.logical_xor(x, y)), name


# -- two threads -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: np.ascontiguousarray(arr(515, 520)).T,                # 2-D transposed, partial tiles
    lambda: arr(9, 130, 260).transpose(2, 0, 1),                  # 3-D, reordered
    lambda: arr(1 << 16, 5),                                      # contiguous: dims merged
    lambda: np.broadcast_to(arr(515, 1), (515, 520)),             # expanded: unit stride along dim 0 only
])
def test_large_inputs_split_over_two_threads(scale, scale3, make):
    x = make()
    assert x.size >= KERNEL_SPLIT_MIN
    assert exact(run(scale if x.ndim == 2 else scale3, x), x * 2 + 1)


# -- row kernels -----------------------------------------------------------------------------------------

def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_row_kernels_on_transposed_inputs():
    soft = compile_native(lambda x: x.softmax(-1) * 2, examples(1, 4, 5), dynamic=dynamic(1, 2))
    total = compile_native(lambda x: x.sum(-1, keepdim=True), examples(1, 4, 5), dynamic=dynamic(1, 2))
    for shape in [(37, 53), (600, 520)]:
        for name, x in layouts(arr(*shape)).items():
            for got in run(soft, x):
                assert_close(got, softmax(x) * 2, rtol=1e-5, atol=1e-6)
            for got in run(total, x):
                assert_close(got, x.sum(-1, keepdims=True), rtol=1e-5, atol=1e-4)


# -- the loop order a launch uses (tscript_runtime.loop_order) --------------------------------------------

# (sizes, strides of the output then the inputs) -> (sizes, strides) in the kernel's loop order
PLANS = [
    # contiguous: one loop over every element
    (([4, 5, 6], [[30, 6, 1], [30, 6, 1]]), ([1, 1, 120], [[0, 0, 1], [0, 0, 1]])),
    # 2-D transposed: nothing to move (the kernel tiles the last two dims)
    (([8, 9], [[9, 1], [1, 8]]), ([8, 9], [[9, 1], [1, 8]])),
    # x.permute(2, 0, 1) of a contiguous (A, B, C): its unit-stride dim goes next to the innermost
    (([7, 3, 5], [[15, 5, 1], [1, 35, 7]]), ([3, 7, 5], [[5, 15, 1], [35, 1, 7]])),
    # ... unless an array with stride 0 at a position would get a stride there (it may be compiled in)
    (([7, 3, 5], [[15, 5, 1], [1, 35, 7], [0, 1, 0]]), ([7, 3, 5], [[15, 5, 1], [1, 35, 7], [0, 1, 0]])),
    # ... which it may when the array has stride 0 at both positions
    (([7, 3, 5], [[15, 5, 1], [1, 35, 7], [0, 0, 1]]), ([3, 7, 5], [[5, 15, 1], [35, 1, 7], [0, 0, 1]])),
    # size-1 dims stay where they are; the rest merge across them
    (([4, 1, 6], [[6, 0, 1], [6, 0, 1]]), ([1, 1, 24], [[0, 0, 1], [0, 0, 1]])),
    # a broadcast operand merges only where it is stepped over as one run
    (([4, 5, 6], [[30, 6, 1], [0, 6, 1]]), ([4, 1, 30], [[30, 0, 1], [0, 0, 1]])),
    # empty iteration spaces and rank 0
    (([3, 0, 2], [[0, 2, 1], [0, 2, 1]]), ([1, 1, 0], [[0, 0, 1], [0, 0, 1]])),
    (([], [[], []]), ([], [[], []])),
]


@pytest.mark.parametrize("space, expected", PLANS)
def test_loop_order_plans(space, expected):
    sizes, strides = space
    assert loop_order.plan(list(sizes), [list(s) for s in strides], 1) == expected


def test_the_launcher_loops_in_the_planned_order(scale3):
    x = arr(3, 20, 37).transpose(2, 0, 1)  # shape (37, 3, 20), element strides (1, 740, 37)
    kernel = next(iter(scale3.executable.launchers.values()))
    kernel(x)
    plan = kernel._plans[((x.shape, x.strides, x.dtype.num),)]
    assert list(plan.sizes) == [3, 37, 20]
    assert list(plan.strides) == [20, 60, 1, 740, 1, 37]  # output, then x


# -- the generated code ----------------------------------------------------------------------------------

def test_contiguous_loops_vectorize_and_transposed_tiles_shuffle(scale):
    functions = target.optimized_ir(scale.llvm_ir).split("\ndefine ")
    body = {f.split("(")[0].split("@")[-1]: f for f in functions[1:]}
    assert "<16 x float>" in body["kernel_0_plain"]  # the plain nest's innermost loop
    assert "tscript_load_tile_16_float" in body["kernel_0"] and "<16 x float>" in body["kernel_0"]
    assert "shufflevector" in body["tscript_load_tile_16_float"]


def test_kernels_get_a_tiled_walk_only_where_an_input_may_be_transposed():
    """The plan's tile side: inputs of the graph (the caller may pass a transposed array) and strided
    views get one; results of other ops, which are laid out row-major, and broadcast rows do not."""
    def fn(x, w):
        y = (x.t() * 2 + 1) @ w          # a transposed view in a kernel
        return (y.relu() + w[0]).exp(), x * 3  # a GEMM result and a broadcast row; a graph input
    cm = ts.jit.compile(fn, (ts.randn(6, 5), ts.randn(6, 4)))
    tiles = [k["tile"] for k in cm.plan["kernels"].values()]
    assert sorted(tiles) == [0, 16, 16], cm.graph
