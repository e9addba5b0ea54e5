"""Complex tensors as rotary position embeddings use them: `view_as_complex` / `view_as_real` (views),
`polar`, complex multiply, `real` / `imag` / `conj`, `is_complex`, and their gradients (PyTorch's
convention: a real loss's gradient of z = a + ib is dL/da + i dL/db)."""
import numpy as np
import pytest

import tscript as ts
from tscript_runtime.errors import OpRuntimeError


def test_view_as_complex_and_back_share_memory():
    x = ts.arange(8.0).view(2, 2, 2)
    z = ts.view_as_complex(x)
    assert z.dtype == ts.complex64 and z.shape == (2, 2) and z.is_complex() and ts.is_complex(z)
    assert z.tolist() == [[1j, 2 + 3j], [4 + 5j, 6 + 7j]]
    r = ts.view_as_real(z)
    assert r.dtype == ts.float32 and r.shape == (2, 2, 2) and ts.equal(r, x)
    z.mul_(2)
    assert x[0, 1].tolist() == [4.0, 6.0] and r[0, 1].tolist() == [4.0, 6.0]   # one memory
    assert ts.view_as_complex(ts.zeros(3, 2, dtype=ts.float64)).dtype == ts.complex128


def test_view_as_real_of_a_strided_complex_tensor():
    z = ts.view_as_complex(ts.arange(12.0).view(3, 2, 2)).t()        # (2, 3), strides (1, 2) elements
    r = ts.view_as_real(z)
    assert r.shape == (2, 3, 2) and r[1, 2].tolist() == [10.0, 11.0]


@pytest.mark.parametrize("make, message", [
    (lambda: ts.view_as_complex(ts.ones(2, 3)), "last dimension of size 2"),
    (lambda: ts.view_as_complex(ts.ones(2, 2).t()), "last dimension with stride 1"),
    (lambda: ts.view_as_complex(ts.ones(3, 3)[:, :2]), "stride divisible by 2"),
    (lambda: ts.view_as_complex(ts.ones(2, 2, dtype=ts.int64)), "float and double"),
    (lambda: ts.view_as_complex(ts.ones(2, 2).half()), "Half"),
    (lambda: ts.view_as_real(ts.ones(2)), "only supported for complex tensors"),
    (lambda: ts.ones(2).imag, "non-complex dtypes"),
    (lambda: ts.polar(ts.ones(2), ts.ones(2, dtype=ts.float64)), "scalar type Float but got scalar type Double"),
    (lambda: ts.polar(ts.ones(2, dtype=ts.int64), ts.ones(2, dtype=ts.int64)), "Half, Float or Double"),
])
def test_bad_arguments_raise_pytorchs_errors(make, message):
    with pytest.raises(OpRuntimeError, match=message):
        make()


def test_polar_complex_and_the_parts():
    r, angle = ts.tensor([1.0, 2.0, 0.5]), ts.tensor([0.0, np.pi / 2, np.pi])
    z = ts.polar(r, angle)
    expected = np.array([1.0, 2j, -0.5])
    np.testing.assert_allclose(z.numpy(), expected, atol=1e-6)
    assert z.dtype == ts.complex64
    np.testing.assert_allclose(z.real.numpy(), expected.real, atol=1e-6)
    np.testing.assert_allclose(z.imag.numpy(), expected.imag, atol=1e-6)
    assert ts.complex(ts.tensor([1.0]), ts.tensor([2.0])).tolist() == [1 + 2j]
    assert z.conj().imag.tolist() == pytest.approx([0.0, -2.0, z.imag[2].item() * -1])
    assert z.abs().dtype == ts.float32 and z.abs().tolist() == pytest.approx([1.0, 2.0, 0.5])
    x = ts.ones(2)
    assert x.real is x and x.conj() is x and not x.is_conj()            # real tensors are their own parts


def test_complex_arithmetic_and_promotion():
    a = ts.tensor([1 + 2j, 3 - 1j])
    assert a.dtype == ts.complex64                                      # Python complex: the default complex
    assert (a * a).tolist() == [-3 + 4j, 8 - 6j]
    assert (a * 2).tolist() == [2 + 4j, 6 - 2j] and (a * ts.tensor([2.0, 0.5])).tolist() == [2 + 4j, 1.5 - 0.5j]
    assert (ts.ones(2, dtype=ts.int64) * 1j).dtype == ts.complex64
    assert (a + ts.ones(2, dtype=ts.float64)).dtype == ts.complex128
    assert (a.to(ts.complex128) / 2).tolist() == [0.5 + 1j, 1.5 - 0.5j]
    assert repr(a) == "tensor([1.+2.j, 3.-1.j])"


def _finite_difference(fn, x: np.ndarray, eps=1e-6) -> np.ndarray:
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        grad[i] = (fn(up) - fn(down)) / (2 * eps)
    return grad


def _loss(lib_tensor, q, angle):
    """A real loss through view_as_complex, a complex multiply by polar(1, angle) and view_as_real."""
    z = ts.view_as_complex(lib_tensor(q))
    rotated = ts.view_as_real(z * ts.polar(ts.ones_like(lib_tensor(angle)), lib_tensor(angle)))
    return (rotated * ts.arange(float(rotated.numel()), dtype=ts.float64).view(rotated.shape)).sum()


def test_gradients_through_complex_views_and_multiply_match_finite_differences():
    rng = np.random.default_rng(0)
    q, angle = rng.standard_normal((3, 2, 2)), rng.standard_normal((3, 2))
    tq, ta = ts.tensor(q, requires_grad=True), ts.tensor(angle, requires_grad=True)
    _loss(lambda a: a if isinstance(a, ts.Tensor) else ts.tensor(a), tq, ta).backward()
    assert tq.grad.dtype == ts.float64 and ta.grad.dtype == ts.float64
    np.testing.assert_allclose(tq.grad.numpy(), _finite_difference(lambda v: _loss(ts.tensor, v, angle).item(), q),
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ta.grad.numpy(), _finite_difference(lambda v: _loss(ts.tensor, q, v).item(), angle),
                               rtol=1e-6, atol=1e-6)


def test_gradients_of_parts_and_conj():
    z = ts.tensor([1 + 2j, -1j], requires_grad=True)
    (z.real * 3 + z.imag * 5 + (z.conj() * z).real).sum().backward()
    assert z.grad.tolist() == [(3 + 2) + (5 + 4) * 1j, 3 + (5 - 2) * 1j]   # d/da + i d/db of the loss


# -- rotary position embeddings, LLaMA style (written for these tests) -----------------------------------

def rotary_frequencies(lib, head_dim: int, positions: int, base: float = 10000.0):
    """cis(position * base^(-2k/head_dim)) for every position and pair k: complex (positions, head_dim/2)."""
    inverse = 1.0 / (base ** (lib.arange(0, head_dim, 2)[: head_dim // 2].float() / head_dim))
    angles = lib.outer(lib.arange(positions).float(), inverse)
    return lib.polar(lib.ones_like(angles), angles)


def rotate(lib, q, k, frequencies):
    """q, k: (batch, positions, heads, head_dim); each pair of features turned by its position's angle."""
    q_pairs = lib.view_as_complex(q.float().reshape(*q.shape[:-1], -1, 2))
    k_pairs = lib.view_as_complex(k.float().reshape(*k.shape[:-1], -1, 2))
    turn = frequencies.view(1, q_pairs.shape[1], 1, q_pairs.shape[-1])
    q_out = lib.view_as_real(q_pairs * turn).flatten(3)
    k_out = lib.view_as_real(k_pairs * turn).flatten(3)
    return q_out.type_as(q), k_out.type_as(k)


def rotate_by_hand(x: np.ndarray, head_dim: int, base: float = 10000.0) -> np.ndarray:
    """The same rotation with cos/sin on pairs, in float64."""
    inverse = 1.0 / base ** (np.arange(0, head_dim, 2) / head_dim)
    angles = np.arange(x.shape[1])[:, None] * inverse                 # (positions, head_dim/2)
    cos, sin = np.cos(angles)[None, :, None], np.sin(angles)[None, :, None]
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = even * cos - odd * sin, even * sin + odd * cos
    return out


def _rotary_inputs():
    rng = np.random.default_rng(1)
    return (rng.standard_normal((2, 5, 3, 8)).astype(np.float32), rng.standard_normal((2, 5, 3, 8)).astype(np.float32))


def _rotary_run(lib, dtype_name, q, k):
    dtype = getattr(lib, dtype_name)
    tq, tk = lib.tensor(q).to(dtype).requires_grad_(), lib.tensor(k).to(dtype).requires_grad_()
    q_out, k_out = rotate(lib, tq, tk, rotary_frequencies(lib, 8, 5))
    ((q_out.float() ** 2).sum() + (q_out.float() * k_out.float()).sum()).backward()
    return q_out, k_out, tq.grad, tk.grad


def test_rotary_embedding_matches_the_rotation_by_hand():
    q, k = _rotary_inputs()
    q_out, k_out, q_grad, k_grad = _rotary_run(ts, "float32", q, k)
    np.testing.assert_allclose(q_out.detach().numpy(), rotate_by_hand(q.astype(np.float64), 8), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(k_out.detach().numpy(), rotate_by_hand(k.astype(np.float64), 8), rtol=1e-5, atol=1e-5)
    # loss = |R q|^2 + <R q, R k> = |q|^2 + <q, k> (a rotation keeps lengths and angles): grads 2q + k and q
    np.testing.assert_allclose(q_grad.numpy(), 2 * q + k, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(k_grad.numpy(), q, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype_name", ["float32", "float16", "bfloat16"])
def test_rotary_embedding_forward_and_backward_match_pytorch(oracle, dtype_name):
    q, k = _rotary_inputs()
    ours = _rotary_run(ts, dtype_name, q, k)
    theirs = _rotary_run(oracle, dtype_name, q, k)
    for a, b in zip(ours, theirs):
        assert a.dtype.name == dtype_name and str(b.dtype) == f"torch.{dtype_name}"
        np.testing.assert_allclose(a.detach().float().numpy(), b.detach().float().numpy(), rtol=1e-5, atol=1e-5)
