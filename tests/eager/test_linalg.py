"""Linear algebra ops: the matmul family and einsum against numpy and PyTorch (values, dtypes,
PyTorch's shape rules and error messages), and their shape rules on symbolic shapes."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tscript as ts
from tests.conftest import assert_close
from tscript_runtime.ops import OPS, TensorMeta

RNG = np.random.default_rng(0)
DTYPES = [np.float32, np.float64, np.int64, np.int32]
MM_TOL = dict(rtol=1e-4, atol=1e-5)


def data(shape, dtype=np.float32):
    """Random values; integers small enough that products are exact."""
    if np.issubdtype(dtype, np.integer):
        return RNG.integers(-5, 6, shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


# (shape of a, shape of b, shape of a @ b) covering every case of PyTorch's matmul rules
MATMUL_SHAPES = [
    ((3,), (3,), ()),                        # dot
    ((2, 3), (3,), (2,)),                    # matrix @ vector
    ((3,), (3, 4), (4,)),                    # vector @ matrix
    ((2, 3), (3, 4), (2, 4)),                # mm
    ((5, 2, 3), (3,), (5, 2)),               # batched matrix @ vector
    ((3,), (5, 3, 4), (5, 4)),               # vector @ batched matrix
    ((5, 2, 3), (3, 4), (5, 2, 4)),          # batch @ matrix
    ((2, 3), (5, 3, 4), (5, 2, 4)),          # matrix @ batch
    ((5, 2, 3), (5, 3, 4), (5, 2, 4)),       # bmm
    ((5, 1, 2, 3), (4, 3, 2), (5, 4, 2, 2)),  # broadcast batch dims
    ((1, 2, 3), (6, 3, 1), (6, 2, 1)),
    ((0, 2, 3), (3, 4), (0, 2, 4)),          # empty batch
    ((2, 0), (0, 4), (2, 4)),                # empty inner dim -> zeros
    ((0,), (0,), ()),
]


@pytest.mark.parametrize("a_shape,b_shape,out_shape", MATMUL_SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_shapes_values_and_dtype(a_shape, b_shape, out_shape, dtype):
    a, b = data(a_shape, dtype), data(b_shape, dtype)
    out = ts.matmul(ts.tensor(a), ts.tensor(b))
    assert tuple(out.shape) == out_shape
    assert_close(out, np.asarray(np.matmul(a, b), dtype), **MM_TOL)
    assert_close(ts.tensor(a) @ ts.tensor(b), out)
    assert_close(ts.tensor(a).matmul(ts.tensor(b)), out)


@pytest.mark.parametrize("a_shape,b_shape,out_shape", MATMUL_SHAPES)
def test_matmul_matches_torch(a_shape, b_shape, out_shape, oracle):
    for dtype in (np.float32, np.int64):
        a, b = data(a_shape, dtype), data(b_shape, dtype)
        assert_close(ts.matmul(ts.tensor(a), ts.tensor(b)),
                     oracle.matmul(oracle.tensor(a), oracle.tensor(b)), **MM_TOL)


@pytest.mark.parametrize("a_shape,b_shape,out_shape", MATMUL_SHAPES)
def test_matmul_shape_rule_agrees_on_metas(a_shape, b_shape, out_shape):
    op = OPS["aten::matmul"]
    out = op.meta(TensorMeta(a_shape, np.dtype(np.float32)), TensorMeta(b_shape, np.dtype(np.float32)))
    assert out.shape == out_shape and out.dtype == np.float32


def test_matmul_rule_with_symbolic_dims():
    f32 = np.dtype(np.float32)
    op = OPS["aten::matmul"]
    assert op.meta(TensorMeta(("batch", 8, 784), f32), TensorMeta((784, 10), f32)).shape == ("batch", 8, 10)
    assert op.meta(TensorMeta(("n", "k"), f32), TensorMeta((5, "m"), f32)).shape == ("n", "m")
    assert op.meta(TensorMeta(("b", 2, 3), f32), TensorMeta((1, 3, 4), f32)).shape == ("b", 2, 4)
    with pytest.raises(RuntimeError, match=r"shapes cannot be multiplied \(b\*8x784 and 100x10\)"):
        op.meta(TensorMeta(("b", 8, 784), f32), TensorMeta((100, 10), f32))


@settings(max_examples=40, deadline=None)
@given(batch_a=st.lists(st.integers(1, 3), max_size=3), batch_b=st.lists(st.integers(1, 3), max_size=3),
       n=st.integers(1, 4), k=st.integers(0, 4), m=st.integers(1, 4), vec_a=st.booleans(), vec_b=st.booleans())
def test_matmul_broadcasting_property(batch_a, batch_b, n, k, m, vec_a, vec_b):
    # make the batch dims broadcastable: where both have a dim, one of them is 1 or they agree
    tail = min(len(batch_a), len(batch_b))
    for i in range(1, tail + 1):
        if batch_a[-i] != batch_b[-i]:
            batch_b[-i] = 1
    a_shape = (k,) if vec_a else (*batch_a, n, k)
    b_shape = (k,) if vec_b else (*batch_b, k, m)
    a, b = data(a_shape), data(b_shape)
    out = ts.matmul(ts.tensor(a), ts.tensor(b))
    assert_close(out, np.asarray(np.matmul(a, b), np.float32), **MM_TOL)
    assert out.shape == OPS["aten::matmul"].shape(a, b)


def test_float32_stays_float32_and_large_products_are_accurate():
    a, b = data((64, 256)), data((256, 32))
    out = ts.tensor(a) @ ts.tensor(b)
    assert out.dtype == ts.float32
    assert_close(out, (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32), **MM_TOL)


def test_matmul_of_non_contiguous_views():
    base = data((4, 6))
    t = ts.tensor(base)
    assert_close(t.t() @ t, base.T @ base, **MM_TOL)
    even, odd = ts.from_numpy(base[:, ::2]), ts.from_numpy(base[:, 1::2])
    assert not even.is_contiguous()
    assert_close(even.t() @ odd, base[:, ::2].T @ base[:, 1::2], **MM_TOL)


@pytest.mark.parametrize("fn,np_fn,shapes", [
    (ts.mm, np.matmul, [(2, 3), (3, 4)]),
    (ts.bmm, np.matmul, [(5, 2, 3), (5, 3, 4)]),
    (ts.dot, np.dot, [(7,), (7,)]),
    (ts.mv, np.matmul, [(2, 3), (3,)]),
    (ts.outer, np.outer, [(3,), (4,)]),
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_products_vs_numpy(fn, np_fn, shapes, dtype):
    a, b = (data(s, dtype) for s in shapes)
    out = fn(ts.tensor(a), ts.tensor(b))
    assert_close(out, np.asarray(np_fn(a, b), dtype), **MM_TOL)
    assert_close(getattr(ts.tensor(a), fn.__name__)(ts.tensor(b)), out)


@pytest.mark.parametrize("name,shapes", [
    ("mm", [(2, 3), (3, 4)]), ("bmm", [(5, 2, 3), (5, 3, 4)]), ("dot", [(7,), (7,)]), ("mv", [(2, 3), (3,)]),
    ("outer", [(3,), (4,)]), ("mm", [(0, 3), (3, 4)]), ("dot", [(0,), (0,)]),
])
def test_products_match_torch(name, shapes, oracle):
    for dtype in (np.float32, np.float64, np.int32):
        a, b = (data(s, dtype) for s in shapes)
        assert_close(getattr(ts, name)(ts.tensor(a), ts.tensor(b)),
                     getattr(oracle, name)(oracle.tensor(a), oracle.tensor(b)), **MM_TOL)


def test_outer_promotes_like_mul(oracle):
    for a, b in [(np.ones(2, np.int64), np.ones(3, np.float32)), (np.ones(2, bool), np.ones(3, bool)),
                 (np.ones(2, np.float32), np.ones(3, np.float64))]:
        assert_close(ts.outer(ts.tensor(a), ts.tensor(b)), oracle.outer(oracle.tensor(a), oracle.tensor(b)))


# -- addmm --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("self_shape", [(2, 4), (4,), (1, 4), (2, 1), ()])
def test_addmm_broadcasts_self(self_shape, oracle):
    s, m1, m2 = data(self_shape), data((2, 3)), data((3, 4))
    expected = 0.5 * s + 2.0 * (m1 @ m2)
    out = ts.addmm(ts.tensor(s), ts.tensor(m1), ts.tensor(m2), beta=0.5, alpha=2.0)
    assert_close(out, expected.astype(np.float32), **MM_TOL)
    assert_close(out, oracle.addmm(oracle.tensor(s), oracle.tensor(m1), oracle.tensor(m2), beta=0.5, alpha=2.0),
                 **MM_TOL)


def test_addmm_zero_beta_ignores_nan_and_zero_alpha_ignores_inf(oracle):
    nan, m1, m2 = np.full((2, 2), np.nan, np.float32), data((2, 3)), data((3, 2))
    out = ts.addmm(ts.tensor(nan), ts.tensor(m1), ts.tensor(m2), beta=0)
    assert_close(out, m1 @ m2, **MM_TOL)
    inf = np.full((2, 3), np.inf, np.float32)
    out = ts.addmm(ts.full((2, 2), 2.0), ts.tensor(inf), ts.tensor(m2), alpha=0)
    assert out.tolist() == [[2.0, 2.0], [2.0, 2.0]]
    assert_close(out, oracle.addmm(oracle.full((2, 2), 2.0), oracle.tensor(inf), oracle.tensor(m2), alpha=0))


def test_addmm_integers_truncate_beta_and_alpha(oracle):
    s, m1, m2 = np.ones((2, 4), np.int64), np.ones((2, 3), np.int64), np.ones((3, 4), np.int64)
    for kw in ({"beta": 0.5}, {"alpha": 2.7}, {"beta": 2, "alpha": 3}):
        out = ts.addmm(ts.tensor(s), ts.tensor(m1), ts.tensor(m2), **kw)
        assert_close(out, oracle.addmm(oracle.tensor(s), oracle.tensor(m1), oracle.tensor(m2), **kw))
    assert ts.addmm(ts.tensor(s), ts.tensor(m1), ts.tensor(m2), alpha=2.7).tolist()[0] == [7, 7, 7, 7]


def test_addmm_in_place():
    s, m1, m2 = data((2, 4)), data((2, 3)), data((3, 4))
    t = ts.tensor(s)
    assert t.addmm_(ts.tensor(m1), ts.tensor(m2)) is t
    assert t._version == 1
    assert_close(t, s + m1 @ m2, **MM_TOL)


# -- errors ---------------------------------------------------------------------------------------------

def f(*shape, dtype=ts.float32):
    return ts.ones(*shape, dtype=dtype)


ERRORS = [
    (lambda: f(2, 3) @ f(4, 5), RuntimeError, r"matmul: mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"),
    (lambda: f(3) @ f(4, 5), RuntimeError, r"shapes cannot be multiplied \(1x3 and 4x5\)"),
    (lambda: f(2, 2, 3) @ f(4, 5), RuntimeError, r"shapes cannot be multiplied \(4x3 and 4x5\)"),
    (lambda: f(3) @ f(4), RuntimeError, r"inconsistent tensor size, expected tensor \[3\] and src \[4\]"),
    (lambda: f(2, 3) @ f(4), RuntimeError, r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)"),
    (lambda: f(5, 4, 2, 3) @ f(4), RuntimeError, r"size mismatch, got input \(40\), mat \(40x3\), vec \(4\)"),
    (lambda: f(7, 1, 2, 3) @ f(6, 4, 5), RuntimeError,
     r"Expected size for first two dimensions of batch2 tensor to be: \[42, 3\] but got: \[42, 4\]\."),
    (lambda: f(2, 2, 3) @ f(3, 3, 5), RuntimeError,
     r"The size of tensor a \(2\) must match the size of tensor b \(3\) at non-singleton dimension 0"),
    (lambda: ts.tensor(1.0) @ f(3), RuntimeError,
     "both arguments to matmul need to be at least 1D, but they are 0D and 1D"),
    (lambda: f(3) @ ts.tensor(1.0), RuntimeError, "but they are 1D and 0D"),
    (lambda: f(2, 3) @ f(3, 4, dtype=ts.float64), RuntimeError,
     "expected m1 and m2 to have the same dtype, but got: float != double"),
    (lambda: f(2, 3, dtype=ts.int64) @ f(3, 4, dtype=ts.int32), RuntimeError, "but got: long int != int"),
    (lambda: f(3) @ f(3, dtype=ts.float64), RuntimeError,
     "expected both vectors to have same dtype, but found Float and Double"),
    (lambda: f(2, 3, dtype=ts.bool) @ f(3, 4, dtype=ts.bool), RuntimeError, "not implemented for 'Bool'"),
    (lambda: ts.matmul(f(2, 3), 3), TypeError, r"matmul\(\): argument 'other' \(position 2\) must be Tensor, not int"),
    (lambda: ts.mm(f(3), f(3, 5)), RuntimeError, "mm: self must be a matrix, got 1-D tensor"),
    (lambda: ts.mm(f(2, 3), f(3)), RuntimeError, "mm: mat2 must be a matrix, got 1-D tensor"),
    (lambda: ts.mm(f(2, 3), f(4, 5)), RuntimeError, r"mm: mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"),
    (lambda: ts.mm(f(2, 3, dtype=ts.float64), f(3, 4)), RuntimeError, "but got: double != float"),
    (lambda: ts.bmm(f(2, 3), f(2, 3, 5)), RuntimeError, "bmm: batch1 must be a 3D tensor"),
    (lambda: ts.bmm(f(2, 2, 3), f(3, 5)), RuntimeError, "bmm: batch2 must be a 3D tensor"),
    (lambda: ts.bmm(f(2, 2, 3), f(1, 3, 5)), RuntimeError,
     r"Expected size for first two dimensions of batch2 tensor to be: \[2, 3\] but got: \[1, 3\]\."),
    (lambda: ts.bmm(f(2, 2, 3), f(2, 4, 5)), RuntimeError, r"to be: \[2, 3\] but got: \[2, 4\]\."),
    (lambda: ts.bmm(f(2, 2, 3), f(2, 3, 5, dtype=ts.float64)), RuntimeError,
     "expected scalar type Float but found Double"),
    (lambda: ts.dot(f(3), f(4)), RuntimeError, r"inconsistent tensor size, expected tensor \[3\] and src \[4\]"),
    (lambda: ts.dot(f(3, 1), f(3)), RuntimeError, "1D tensors expected, but got 2D and 1D tensors"),
    (lambda: ts.dot(f(3), f(3, dtype=ts.int64)), RuntimeError, "found Float and Long"),
    (lambda: ts.dot(f(3, dtype=ts.bool), f(3, dtype=ts.bool)), RuntimeError, "\"dot\" not implemented for 'Bool'"),
    (lambda: ts.mv(f(2, 3), f(4)), RuntimeError, r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)"),
    (lambda: ts.mv(f(2, 3), f(3, 1)), RuntimeError, r"mv: expected a matrix \(2-D\) and a vector \(1-D\)"),
    (lambda: ts.mv(f(2, 3), f(3, dtype=ts.float64)), RuntimeError, "same dtype, but got Float and Double"),
    (lambda: ts.outer(f(2, 1), f(3)), RuntimeError, "outer: Expected 1-D argument self, but got 2-D"),
    (lambda: ts.outer(f(2), f(3, 1)), RuntimeError, "outer: Expected 1-D argument vec2, but got 2-D"),
    (lambda: ts.addmm(f(3, 4), f(2, 3), f(3, 4)), RuntimeError,
     r"The expanded size of the tensor \(2\) must match the existing size \(3\) at non-singleton dimension 0"),
    (lambda: ts.addmm(f(2, 4, 1), f(2, 3), f(3, 4)), RuntimeError, r"number of sizes provided \(2\)"),
    (lambda: ts.addmm(f(4), f(2, 3), f(3)), RuntimeError, "mat2 must be a matrix, got 1-D tensor"),
    (lambda: ts.addmm(f(4), f(2, 3), f(4, 4)), RuntimeError, r"shapes cannot be multiplied \(2x3 and 4x4\)"),
    (lambda: ts.addmm(f(4, dtype=ts.float64), f(2, 3), f(3, 4)), RuntimeError,
     "self and mat2 must have the same dtype, but got Double and Float"),
    (lambda: ts.addmm(f(4), f(2, 3, dtype=ts.int64), f(3, 4)), RuntimeError,
     "mat1 and mat2 must have the same dtype, but got Long and Float"),
]


@pytest.mark.parametrize("call,exc,match", ERRORS)
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# -- einsum ---------------------------------------------------------------------------------------------

EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),             # implicit output
    ("bij,bjk->bik", [(2, 2, 3), (1, 3, 4)]),  # size-1 dims broadcast
    ("...ij,...jk->...ik", [(5, 2, 3), (3, 4)]),
    ("i,i->", [(3,), (3,)]),
    ("i,j->ij", [(3,), (2,)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("b i d, b j d -> b i j", [(2, 3, 4), (2, 5, 4)]),  # spaces are ignored
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("Ab,bC->AC", [(2, 3), (3, 4)]),
    ("ij,jk->ik", [(2, 0), (0, 4)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM_CASES)
def test_einsum_vs_numpy_and_torch(eq, shapes, oracle):
    arrays = [data(s) for s in shapes]
    out = ts.einsum(eq, *[ts.tensor(a) for a in arrays])
    assert_close(out, np.asarray(np.einsum(eq.replace(" ", ""), *arrays), np.float32), **MM_TOL)
    assert_close(out, oracle.einsum(eq, *[oracle.tensor(a) for a in arrays]), **MM_TOL)
    assert out.shape == OPS["aten::einsum"].shape(eq, [TensorMeta(s, np.dtype(np.float32)) for s in shapes])


@pytest.mark.parametrize("eq,shapes", [
    ("...i->i", [(2, 3)]), ("i...->", [(2, 3)]), ("...ij->...", [(4, 2, 3)]), ("...ii->...i", [(2, 3, 3)]),
    ("...ij,...jk->...ik", [(2, 5, 2, 3), (5, 3, 4)]), ("...ij,...jk->ik", [(2, 1, 2, 3), (5, 3, 4)]),
    ("i...j,j...->...", [(2, 4, 3), (3, 4)]),
])
def test_einsum_ellipsis_broadcasts_and_sums_like_torch(eq, shapes, oracle):
    arrays = [data(s) for s in shapes]
    out = ts.einsum(eq, *[ts.tensor(a) for a in arrays])
    assert_close(out, oracle.einsum(eq, *[oracle.tensor(a) for a in arrays]), **MM_TOL)
    assert out.shape == OPS["aten::einsum"].shape(eq, [TensorMeta(s, np.dtype(np.float32)) for s in shapes])


def test_einsum_rule_with_symbolic_dims():
    f32 = np.dtype(np.float32)
    shape = OPS["aten::einsum"].shape
    assert shape("bij,jk->bik", [TensorMeta(("B", 2, 3), f32), TensorMeta((3, 4), f32)]) == ("B", 2, 4)
    assert shape("...j,jk", [TensorMeta(("B", "T", 3), f32), TensorMeta((3, 4), f32)]) == ("B", "T", 4)


def test_einsum_call_forms():
    a, b = ts.tensor(data((2, 3))), ts.tensor(data((3, 4)))
    expected = ts.einsum("ij,jk->ik", a, b)
    assert_close(ts.einsum("ij,jk->ik", [a, b]), expected)
    assert_close(ts.einsum("ij,jk->ik", (a, b)), expected)
    assert_close(ts.einsum(a, [0, 1], b, [1, 2], [0, 2]), expected)
    assert_close(ts.einsum(a, [0, 1], b, [1, 2]), expected)
    x = ts.tensor(data((5, 2, 3)))
    assert_close(ts.einsum(x, [..., 0, 1], [..., 1, 0]), x.transpose(1, 2))


@pytest.mark.parametrize("eq,dtype,shapes", [
    ("i->", np.int32, [(3,)]), ("ij->i", np.int32, [(3, 2)]), ("i,i->", np.int32, [(3,), (3,)]),
    ("ij,jk->ik", np.int64, [(2, 3), (3, 4)]), ("i->i", np.int32, [(3,)]), ("i->", bool, [(3,)]),
    ("i,j->ij", bool, [(2,), (3,)]), ("ij,j->j", bool, [(2, 3), (3,)]), ("ii->", np.int32, [(3, 3)]),
])
def test_einsum_dtypes_match_torch(eq, dtype, shapes, oracle):
    arrays = [np.ones(s, dtype) for s in shapes]
    out = ts.einsum(eq, *[ts.tensor(a) for a in arrays])
    assert_close(out, oracle.einsum(eq, *[oracle.tensor(a) for a in arrays]))


def t2(*shape):
    return ts.ones(*shape)


EINSUM_ERRORS = [
    (lambda: ts.einsum("ij,jk->ik", t2(2, 3)), RuntimeError, "fewer operands were provided than specified"),
    (lambda: ts.einsum("ij->ij", t2(2, 3), t2(3)), RuntimeError, "more operands were provided than specified"),
    (lambda: ts.einsum("ij,jk->ik", t2(2, 3), t2(4, 4)), RuntimeError,
     "subscript j has size 4 for operand 1 which does not broadcast with previously seen size 3"),
    (lambda: ts.einsum("ijk,jk->ik", t2(2, 3), t2(3, 4)), RuntimeError,
     r"number of subscripts in the equation \(3\) does not match the number of dimensions \(2\) for operand 0"),
    (lambda: ts.einsum("...ijk->i", t2(2, 3)), RuntimeError, r"\(3\) is more than the number of dimensions \(2\)"),
    (lambda: ts.einsum("ij,jk->iz", t2(2, 3), t2(3, 4)), RuntimeError,
     "output subscript z does not appear in the equation for any input operand"),
    (lambda: ts.einsum("ij->ii", t2(3, 3)), RuntimeError, "output subscript i appears more than once"),
    (lambda: ts.einsum("i1,jk->ik", t2(2, 3), t2(3, 4)), RuntimeError,
     r"invalid subscript given at index 1 in the equation string, subscripts must be in \[a-zA-Z\]"),
    (lambda: ts.einsum("i.j->", t2(2, 3)), RuntimeError, "found '.' for operand 0 that is not part of any ellipsis"),
    (lambda: ts.einsum("ii->i", t2(2, 3)), RuntimeError,
     "subscript i is repeated for operand 0 but the sizes don't match"),
    (lambda: ts.einsum("...,...->...", t2(2, 3), t2(4, 3)), RuntimeError, "ellipsis do not broadcast"),
    (lambda: ts.einsum("ij,jk->ik", t2(2, 3), t2(3, 4).double()), RuntimeError,
     "expected scalar type Float but found Double"),
    (lambda: ts.einsum("ij,j->i", t2(2, 3).bool(), t2(3).bool()), RuntimeError, "not implemented for 'Bool'"),
    (lambda: ts.einsum("ij,jk->ik"), ValueError, "at least one operand"),
    (lambda: ts.einsum("ij,jk->ik", t2(2, 3), 3), TypeError, "must be tuple of Tensors"),
    (lambda: ts.einsum(t2(2, 3), [0, 99]), ValueError, r"not within the valid range \[0, 52\)"),
]


@pytest.mark.parametrize("call,exc,match", EINSUM_ERRORS)
def test_einsum_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
