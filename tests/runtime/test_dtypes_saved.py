"""Models in float16, bfloat16 and with complex intermediates (rotary embeddings) through trace /
script / compile -> `.tsm` -> `tscript.jit.load` and the standalone runtime: the eager results, the
parameters in their dtypes, the signature naming them, and an InputError for another dtype."""
import numpy as np
import pytest

import tscript as ts
import tscript_runtime as rt
from tscript import nn
from tscript.ir import parse_ir
from tscript_runtime import InputError
from tests.eager.test_complex import _rotary_inputs, rotary_frequencies, rotate

NARROW = ["float16", "bfloat16"]
METHODS = {"float32": "float", "float16": "half", "bfloat16": "bfloat16"}


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.norm, self.fc2 = nn.Linear(4, 8), nn.LayerNorm(8), nn.Linear(8, 3)
        self.register_buffer("codes", ts.tensor([3, 200, 7], dtype=ts.uint8))

    def forward(self, x):
        return self.fc2(nn.functional.gelu(self.norm(self.fc1(x)))).softmax(-1) * self.codes


class Rotary(nn.Module):
    def __init__(self):
        super().__init__()
        self.query = nn.Linear(8, 8)
        self.register_buffer("frequencies", rotary_frequencies(ts, 8, 5))

    def forward(self, q, k):
        q, k = rotate(ts, self.query(q), k, self.frequencies)
        return (q * k).sum(-1)


def _compilers(model, inputs):
    return {"trace": lambda: ts.jit.trace(model, inputs), "script": lambda: ts.jit.script(model),
            "compile": lambda: ts.jit.compile(model, inputs)}


@pytest.mark.parametrize("dtype_name", NARROW)
@pytest.mark.parametrize("how", ["trace", "script", "compile"])
def test_a_narrow_model_saves_and_runs_in_the_runtime(tmp_path, dtype_name, how):
    dtype = getattr(ts, dtype_name)
    ts.manual_seed(0)
    model = Head().to(dtype)
    x = ts.randn(5, 4).to(dtype)
    expected = model(x).detach()
    assert expected.dtype == dtype and model.codes.dtype == ts.uint8
    compiled = _compilers(model, (x,))[how]()
    assert ts.equal(compiled(x).detach(), expected)
    ts.jit.save(compiled, tmp_path / "m.tsm")
    assert ts.equal(ts.jit.load(tmp_path / "m.tsm")(x).detach(), expected)
    loaded = rt.load(tmp_path / "m.tsm")
    out = loaded.run(x.numpy())
    assert out.dtype == x.numpy().dtype
    np.testing.assert_array_equal(out, expected.numpy())
    assert loaded.params["fc1.weight"].dtype == model.fc1.weight.detach().numpy().dtype
    assert loaded.params["codes"].dtype == np.uint8
    if how != "script":  # (a scripted model's signature names no dtypes: linear says what is wrong)
        with pytest.raises(InputError, match=f"expected dtype {dtype_name}, got float32"):
            loaded.run(x.float().numpy())


@pytest.mark.parametrize("dtype_name", NARROW)
def test_a_compiled_narrow_model_trains_like_eager(tmp_path, dtype_name):
    dtype = getattr(ts, dtype_name)
    ts.manual_seed(0)
    model = Head().to(dtype)
    x = ts.randn(5, 4).to(dtype)
    compiled = ts.jit.compile(model, (x,), backward=True)
    xc, xe = x.clone().requires_grad_(), x.clone().requires_grad_()
    compiled(xc).float().sum().backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()
    model(xe).float().sum().backward()
    assert xc.grad.dtype == dtype and ts.equal(xc.grad, xe.grad)
    for n, p in model.named_parameters():
        assert grads[n].dtype == dtype and ts.equal(grads[n], p.grad), n


@pytest.mark.parametrize("dtype_name", ["float32"] + NARROW)
@pytest.mark.parametrize("backward", [False, True])
def test_rotary_embeddings_compile_save_and_run_standalone(tmp_path, dtype_name, backward):
    dtype = getattr(ts, dtype_name)
    ts.manual_seed(0)
    model = getattr(Rotary(), METHODS[dtype_name])()          # floats only: the frequencies stay complex64
    q, k = (ts.tensor(a).to(dtype) for a in _rotary_inputs())
    expected = model(q, k).detach()
    compiled = ts.jit.compile(model, (q, k), backward=backward)
    assert ts.equal(compiled(q, k).detach(), expected)
    if backward:
        qc, qe = q.clone().requires_grad_(), q.clone().requires_grad_()
        compiled(qc, k).float().sum().backward()
        model(qe, k).float().sum().backward()
        assert ts.equal(qc.grad, qe.grad)
    ts.jit.save(compiled, tmp_path / "rotary.tsm")
    loaded = rt.load(tmp_path / "rotary.tsm")
    out = loaded.run(q.numpy(), k.numpy())
    out = out[0] if isinstance(out, tuple) else out
    np.testing.assert_array_equal(out, expected.numpy())
    assert loaded.params["frequencies"].dtype == np.complex64


def test_graphs_name_the_dtypes_as_torchscript_and_parse_back():
    def convert(x):
        z = ts.view_as_complex(x.reshape(2, 2, 2))
        return ts.view_as_real(z * z).to(ts.bfloat16) * 2, x.to(ts.uint8), x.to(ts.int8), x.half(), x.short()

    graph = ts.jit.trace(convert, (ts.randn(2, 4),)).graph
    text = str(graph)
    for name in ("ComplexFloat(2, 2)", "BFloat16(2, 2, 2)", "Byte(2, 4)", "Char(2, 4)", "Half(2, 4)", "Short(2, 4)"):
        assert name in text
    assert str(parse_ir(text)) == text
