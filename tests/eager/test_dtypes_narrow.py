"""The dtypes real models use beyond the five of SPEC.md: float16, bfloat16, uint8, int8, int16 (and the
complex ones, tests/eager/test_complex.py). Promotion over every pair against PyTorch's table, the
conversion methods, numpy arrays keeping their dtype, eager ops and autograd in float16/bfloat16
computed in float32 and rounded (as PyTorch's CPU kernels), integer wrap-around, and state dicts
through every file format."""
import copy
import io
import itertools

import ml_dtypes
import numpy as np
import pytest

import tscript as ts
import tscript.nn.functional as F
from tscript_runtime.errors import OpRuntimeError

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
         "complex64", "complex128"]
SCALARS = [True, 3, 2.5, 1j]
NARROW = ["float16", "bfloat16"]
TOLERANCE = {"float16": 2e-3, "bfloat16": 1.6e-2}  # a few units in the last place (torch.testing's)


def operands(lib):
    """Every operand kind of promotion: a tensor with dims and a zero-dim tensor of each dtype, and
    Python scalars, each with its label."""
    out = []
    for name in NAMES:
        d = getattr(lib, name)
        out += [(f"{name}[2]", lib.ones(2, dtype=d)), (f"{name}[]", lib.ones((), dtype=d))]
    return out + [(repr(s), s) for s in SCALARS]


def expected_promotions(torch):
    """(label a, label b) -> PyTorch's result dtype name, or None where PyTorch makes complex32."""
    table = {}
    for (la, a), (lb, b) in itertools.product(operands(torch), repeat=2):
        if isinstance(a, (bool, int, float, complex)) and isinstance(b, (bool, int, float, complex)):
            continue
        out = torch.result_type(a, b)
        table[la, lb] = None if out == torch.complex32 else str(out).removeprefix("torch.")
    return table


def test_promotion_of_every_pair_of_dtypes_and_operand_kinds_is_pytorchs(oracle):
    expected = expected_promotions(oracle)
    ours = dict(operands(ts))
    wrong = []
    for (la, lb), want in expected.items():
        a, b = ours[la], ours[lb]
        try:
            got = ts.result_type(a, b).name
        except OpRuntimeError as e:
            got = None if "complex32" in str(e) else f"error {e}"
        if got != want:
            wrong.append(f"{la} with {lb}: {got} (PyTorch {want})")
    assert not wrong, f"{len(wrong)} of {len(expected)} differ:\n" + "\n".join(wrong[:30])


def test_ops_give_the_promoted_dtype_for_every_pair(oracle):
    """The elementwise ops themselves (not only result_type) follow the table, values included."""
    pairs = [(la, a, ta) for (la, a), (_, ta) in zip(operands(oracle), operands(ts))]
    for (la, a, ta), (lb, b, tb) in itertools.product(pairs, repeat=2):
        if "bool" in la + lb or "True" in la + lb or not (hasattr(a, "dtype") or hasattr(b, "dtype")):
            continue
        if oracle.result_type(a, b) == oracle.complex32:
            continue
        for op in ("add", "mul"):
            want, got = getattr(oracle, op)(a, b), getattr(ts, op)(ta, tb)
            assert got.dtype.name == str(want.dtype).removeprefix("torch."), (la, lb, op)
            np.testing.assert_array_equal(got.to(ts.complex128).numpy(), want.to(oracle.complex128).numpy())


@pytest.mark.parametrize("a, b, expected", [
    ("uint8", "int8", "int16"), ("uint8", "int16", "int16"), ("uint8", "int64", "int64"), ("int8", "int16", "int16"),
    ("float16", "bfloat16", "float32"), ("bfloat16", "int64", "bfloat16"), ("float16", "float32", "float32"),
    ("uint8", "bool", "uint8"), ("bfloat16", "complex64", "complex64"), ("float64", "complex64", "complex128"),
])
def test_promote_types_by_hand(a, b, expected):
    assert ts.promote_types(getattr(ts, a), getattr(ts, b)) == getattr(ts, expected)
    assert (ts.ones(2, dtype=getattr(ts, a)) + ts.ones(2, dtype=getattr(ts, b))).dtype == getattr(ts, expected)


def test_scalars_and_zero_dim_tensors_promote_only_across_categories():
    assert (ts.ones(2, dtype=ts.int16) + 2.5).dtype == ts.float32        # int tensor, float scalar: default float
    assert (ts.ones(2, dtype=ts.uint8) + 7).dtype == ts.uint8
    assert (ts.ones(2, dtype=ts.float16) + 2.5).dtype == ts.float16
    assert (ts.ones(2, dtype=ts.int8) + ts.tensor(5.0)).dtype == ts.float32
    assert (ts.ones(2, dtype=ts.float16) + ts.tensor(5.0, dtype=ts.float64)).dtype == ts.float16
    assert (ts.ones(2, dtype=ts.uint8) + ts.tensor(1000)).dtype == ts.uint8
    assert (ts.ones(2, dtype=ts.float64) * 1j).dtype == ts.complex128
    with pytest.raises(RuntimeError, match="complex32"):
        ts.ones(2, dtype=ts.float16) * 1j                                 # PyTorch's ComplexHalf
    assert not ts.can_cast(ts.float16, ts.int8) and ts.can_cast(ts.uint8, ts.bfloat16)
    assert not ts.can_cast(ts.complex64, ts.float64)


@pytest.mark.parametrize("method, name", [("half", "float16"), ("bfloat16", "bfloat16"), ("byte", "uint8"),
                                          ("char", "int8"), ("short", "int16"), ("float", "float32"),
                                          ("cfloat", "complex64"), ("cdouble", "complex128")])
def test_conversion_methods(method, name):
    x = ts.tensor([1.7, -2.2, 300.0])
    y = getattr(x, method)()
    assert y.dtype == getattr(ts, name) and y.dtype.itemsize == np.dtype(y.numpy().dtype).itemsize
    assert x.to(getattr(ts, name)).dtype == y.dtype and x.to(dtype=name).dtype == y.dtype
    assert ts.half is ts.float16 and ts.short is ts.int16 and ts.cfloat is ts.complex64


def test_conversions_round_and_wrap_as_pytorch():
    x = ts.tensor([1.7, -2.2, 300.0, 1 / 3])
    assert x.half().tolist() == [1.7001953125, -2.19921875, 300.0, 0.333251953125]
    assert x.bfloat16().tolist() == [1.703125, -2.203125, 300.0, 0.333984375]   # round to nearest even
    assert ts.tensor([1.7, -2.2, 300.0]).to(ts.int16).byte().tolist() == [1, 254, 44]
    assert ts.tensor([200, 100], dtype=ts.uint8).char().tolist() == [-56, 100]


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.float16, ml_dtypes.bfloat16, np.complex64])
def test_numpy_arrays_keep_their_dtype(dtype):
    a = np.arange(6).reshape(2, 3).astype(dtype)
    for t in (ts.tensor(a), ts.as_tensor(a), ts.from_numpy(a)):
        assert t.numpy().dtype == a.dtype and t.dtype.name == np.dtype(dtype).name
    assert ts.from_numpy(a).numpy() is a and ts.as_tensor(a).numpy() is a
    assert ts.tensor(a).numpy() is not a


def test_dtype_objects_describe_themselves():
    assert ts.float16.is_floating_point and ts.bfloat16.is_floating_point and not ts.complex64.is_floating_point
    assert ts.complex64.is_complex and ts.complex64.to_real() == ts.float32 and ts.float64.to_complex() == ts.complex128
    assert not ts.uint8.is_signed and ts.int8.is_signed and ts.bfloat16.itemsize == 2
    assert ts.ones(2).half().is_floating_point() and ts.is_floating_point(ts.ones(1, dtype=ts.bfloat16))
    assert ts.finfo(ts.bfloat16).eps == 2 ** -7 and ts.finfo(ts.float16).max == 65504
    assert ts.iinfo(ts.uint8).max == 255 and ts.iinfo(ts.int8).min == -128
    assert repr(ts.ones(2).bfloat16() / 3) == "tensor([0.3340, 0.3340], dtype=tscript.bfloat16)"
    assert repr(ts.tensor([1, 2], dtype=ts.uint8)) == "tensor([1, 2], dtype=tscript.uint8)"


# -- float16 / bfloat16 arithmetic: float32 inside, one rounding per op ----------------------------------

def test_narrow_ops_compute_in_float32_and_round_once():
    x = ts.tensor([1e-3, 2.0]).half()
    assert (x * 1e5).tolist() == [100.0625, float("inf")]  # 1e5 is not rounded to float16 (inf) first
    b = ts.tensor([1.0, 3.0]).bfloat16()
    y = b * 0.5                                          # numpy (ml_dtypes) would give float32 here
    assert y.dtype == ts.bfloat16 and y.tolist() == [0.5, 1.5]
    assert (b @ b).dtype == ts.bfloat16 and (b @ b).item() == 10.0
    big = ts.full((4096,), 1.0, dtype=ts.float16)
    assert big.sum().item() == 4096.0                    # float16 steps at 2048 would stop at 2048
    assert big.sum().dtype == ts.float16 and big.mean().item() == 1.0
    h = ts.tensor([0.1, 0.2]).half()
    assert (h + h).tolist() == [0.199951171875, 0.39990234375]


def test_integer_arithmetic_wraps_as_pytorch():
    u = ts.tensor([1, 200], dtype=ts.uint8)
    assert (u - 3).tolist() == [254, 197] and (u * 300).tolist() == [44, 96] and (u + 100).tolist() == [101, 44]
    assert (u + u).dtype == ts.uint8 and (u + u).tolist() == [2, 144]
    assert (u.sum().dtype, u.sum().item()) == (ts.int64, 201)          # sums of integers are int64
    assert (u / 2).dtype == ts.float32 and (u // 3).tolist() == [0, 66]
    i = ts.tensor([-128, 5], dtype=ts.int8)
    assert (-i).tolist() == [-128, -5] and (i * -1).tolist() == [-128, -5]


CASES = {
    "add": lambda L, F, a, b, w: a + b, "div": lambda L, F, a, b, w: a / (b.abs() + 1),
    "scaled": lambda L, F, a, b, w: a * 1e3 * 1e-3, "exp": lambda L, F, a, b, w: a.exp(),
    "tanh": lambda L, F, a, b, w: a.tanh(), "rsqrt": lambda L, F, a, b, w: (a.abs() + 1).rsqrt(),
    "pow": lambda L, F, a, b, w: a.pow(2), "sum": lambda L, F, a, b, w: a.sum(1), "var": lambda L, F, a, b, w: a.var(1),
    "max": lambda L, F, a, b, w: a.max(1)[0], "cumsum": lambda L, F, a, b, w: a.cumsum(1),
    "softmax": lambda L, F, a, b, w: a.softmax(-1), "log_softmax": lambda L, F, a, b, w: F.log_softmax(a, -1),
    "linear": lambda L, F, a, b, w: F.linear(a, w), "matmul": lambda L, F, a, b, w: a @ w.t(),
    "gelu": lambda L, F, a, b, w: F.gelu(a), "silu": lambda L, F, a, b, w: F.silu(a),
    "layer_norm": lambda L, F, a, b, w: F.layer_norm(a, (6,)), "mse": lambda L, F, a, b, w: F.mse_loss(a, b),
    "cross_entropy": lambda L, F, a, b, w: F.cross_entropy(a, L.tensor([0, 2, 1, 5])),
    "where": lambda L, F, a, b, w: L.where(a > 0, a, b),
    "masked_fill": lambda L, F, a, b, w: a.masked_fill(b > 0, -1e4),
    "cat": lambda L, F, a, b, w: L.cat([a, b], 1), "topk": lambda L, F, a, b, w: a.topk(2)[0],
    "einsum": lambda L, F, a, b, w: L.einsum("ij,kj->ik", a, b),
    "embedding": lambda L, F, a, b, w: F.embedding(L.tensor([0, 4, 1]), w),
    "attention": lambda L, F, a, b, w: F.scaled_dot_product_attention(*(t.view(1, 4, 6) for t in (a, b, b))),
}


def _run_case(lib, functional, name, dtype_name, arrays):
    dtype = getattr(lib, dtype_name)
    a, b, w = (lib.tensor(x).to(dtype).requires_grad_() for x in arrays)
    out = CASES[name](lib, functional, a, b, w)
    weights = lib.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)).astype(np.float32))
    (out.float() * weights).sum().backward()
    return out, [t.grad for t in (a, b, w)]


@pytest.mark.parametrize("dtype_name", NARROW)
@pytest.mark.parametrize("name", sorted(CASES))
def test_narrow_ops_and_gradients_match_pytorch(oracle, name, dtype_name):
    import torch.nn.functional as torch_functional
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((4, 6), (4, 6), (5, 6))]
    want, want_grads = _run_case(oracle, torch_functional, name, dtype_name, arrays)
    got, grads = _run_case(ts, F, name, dtype_name, arrays)
    tol = TOLERANCE[dtype_name]
    assert got.dtype.name == dtype_name and str(want.dtype) == f"torch.{dtype_name}"
    np.testing.assert_allclose(got.detach().float().numpy(), want.detach().float().numpy(), rtol=tol, atol=2 * tol)
    for g, wg in zip(grads, want_grads):
        assert (g is None) == (wg is None)
        if g is not None:
            assert g.dtype.name == dtype_name
            np.testing.assert_allclose(g.float().numpy(), wg.float().numpy(), rtol=tol, atol=4 * tol)


@pytest.mark.parametrize("dtype_name", NARROW)
def test_a_model_trains_in_narrow_floats(dtype_name):
    """Forward, backward and an optimizer step in float16/bfloat16, checked against the same model
    run in float32 on the rounded weights and inputs."""
    dtype = getattr(ts, dtype_name)
    ts.manual_seed(0)
    model = ts.nn.Sequential(ts.nn.Linear(6, 16), ts.nn.LayerNorm(16), ts.nn.GELU(), ts.nn.Linear(16, 3))
    narrow = copy.deepcopy(model).to(dtype)
    wide = copy.deepcopy(narrow).float()
    x, y = ts.randn(8, 6), ts.tensor([0, 1, 2, 0, 1, 2, 0, 1])
    for m, inp in ((narrow, x.to(dtype)), (wide, x.to(dtype).float())):
        F.cross_entropy(m(inp), y).backward()
    for p, q in zip(narrow.parameters(), wide.parameters()):
        assert p.dtype == dtype and p.grad.dtype == dtype
        np.testing.assert_allclose(p.grad.float().numpy(), q.grad.numpy(), rtol=0.05, atol=0.05)
    ts.optim.SGD(narrow.parameters(), lr=0.1).step()
    assert all(p.dtype == dtype for p in narrow.parameters())


def test_module_conversions():
    model = ts.nn.Linear(2, 2)
    model.register_buffer("turn", ts.ones(2, dtype=ts.complex64))
    model.register_buffer("steps", ts.ones(2, dtype=ts.int64))
    model.half()                                            # floating tensors only, as PyTorch's half()
    assert (model.weight.dtype, model.turn.dtype, model.steps.dtype) == (ts.float16, ts.complex64, ts.int64)
    assert model.weight.requires_grad and model.weight.is_leaf
    model.bfloat16()
    assert model.bias.dtype == ts.bfloat16
    model.to(ts.complex128)                                 # to(dtype): floating and complex ones, as PyTorch
    assert (model.weight.dtype, model.turn.dtype, model.steps.dtype) == (ts.complex128, ts.complex128, ts.int64)
    with pytest.raises(TypeError, match="only accepts floating point or complex dtypes"):
        model.to(ts.uint8)


def test_requires_grad_needs_a_floating_or_complex_dtype():
    assert ts.ones(2, dtype=ts.bfloat16).requires_grad_().requires_grad
    assert ts.ones(2, dtype=ts.complex64).requires_grad_().requires_grad
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        ts.ones(2, dtype=ts.uint8).requires_grad_()


def test_to_the_same_dtype_is_the_tensor_itself_and_records_nothing():
    x = ts.randn(3, requires_grad=True)
    assert x.to(ts.float32) is x and x.float() is x and x.is_leaf and x.grad_fn is None
    y = x.half()
    assert y.grad_fn is not None and y.dtype == ts.float16
    y.float().sum().backward()
    assert x.grad.dtype == ts.float32 and x.grad.tolist() == [1.0, 1.0, 1.0]


# -- state dicts ------------------------------------------------------------------------------------------

def _state_dict():
    base = ts.arange(12.0).view(3, 4) / 7
    sd = {name: base.to(getattr(ts, name)) for name in NAMES if name not in ("bool",)}
    sd["bool"] = base > 0.5
    sd["half_view"] = sd["float16"][:, 1]
    return sd


def _assert_same(loaded, saved):
    assert set(loaded) == set(saved)
    for k, v in saved.items():
        assert loaded[k].dtype == v.dtype and loaded[k].shape == v.shape, k
        np.testing.assert_array_equal(loaded[k].numpy(), v.numpy())


def test_tscript_save_and_load_keep_every_dtype():
    buf = io.BytesIO()
    ts.save(_state_dict(), buf)
    buf.seek(0)
    _assert_same(ts.load(buf), _state_dict())


def test_safetensors_keep_every_dtype_they_have(tmp_path):
    sd = {k: v.contiguous() for k, v in _state_dict().items() if k != "complex128"}
    ts.save(sd, tmp_path / "m.safetensors")
    _assert_same(ts.load(tmp_path / "m.safetensors"), sd)
    with pytest.raises(ValueError, match="complex128"):
        ts.save({"c": ts.ones(2, dtype=ts.complex128)}, tmp_path / "c.safetensors")


def test_pytorch_checkpoints_and_safetensors_in_narrow_dtypes_load(oracle, tmp_path):
    import safetensors.torch
    sd = {n: (oracle.arange(6.0).view(2, 3) / 3).to(getattr(oracle, n)) for n in NAMES if n != "bool"}
    sd["param"] = oracle.nn.Parameter(oracle.ones(2, dtype=oracle.bfloat16))
    sd["view"] = sd["float16"][:, 1]
    oracle.save(sd, tmp_path / "ck.pt")
    loaded = ts.load(tmp_path / "ck.pt")
    for k, v in sd.items():
        wide = oracle.complex128 if v.is_complex() else oracle.float64
        assert loaded[k].dtype.name == str(v.dtype).removeprefix("torch."), k
        np.testing.assert_array_equal(loaded[k].detach().to(getattr(ts, str(wide)[6:])).numpy(),
                                      v.detach().to(wide).numpy())
    assert loaded["param"].requires_grad
    flat = {k: v.detach().contiguous() for k, v in sd.items() if k != "complex128"}
    safetensors.torch.save_file(flat, tmp_path / "m.safetensors")
    ours = ts.load(tmp_path / "m.safetensors")
    ts.save(ours, tmp_path / "back.safetensors")
    back = safetensors.torch.load_file(tmp_path / "back.safetensors")
    assert all(oracle.equal(back[k], flat[k]) for k in flat)


def test_a_narrow_model_state_dict_round_trips_into_pytorch(oracle, tmp_path):
    model = ts.nn.Linear(3, 2).to(ts.bfloat16)
    ts.save(model.state_dict(), tmp_path / "m.safetensors")
    import safetensors.torch
    reference = oracle.nn.Linear(3, 2).to(oracle.bfloat16)
    reference.load_state_dict(safetensors.torch.load_file(tmp_path / "m.safetensors"))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(model(ts.tensor(x).bfloat16()).float().detach().numpy(),
                                  reference(oracle.tensor(x).bfloat16()).float().detach().numpy())
