"""`compile(..., backward=True)` plans the backward a training step asks for (every parameter's gradient)
before the forward and compiles its native code in a child process meanwhile: the first backward
finds it in the object cache, and gradients equal eager's with or without child processes."""
import numpy as np
import pytest

import tscript as ts
from tscript import nn
from tscript_runtime.native import child_builds, emit
from tscript_runtime.native.cache import lookup


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(12, 32), nn.Linear(32, 5)

    def forward(self, x):
        return self.fc2(ts.tanh(self.fc1(x))).log_softmax(-1)


def gradients(model, forward, x) -> dict:
    model.zero_grad()
    forward(x).sum().backward()
    return {n: p.grad.numpy().copy() for n, p in model.named_parameters()}


@pytest.mark.parametrize("processes", ["1", "0"])
def test_first_backward_uses_the_speculated_variant(tmp_path, monkeypatch, processes):
    monkeypatch.setenv("TSCRIPT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TSCRIPT_BUILD_PROCESSES", processes)
    monkeypatch.setattr(emit, "PREFETCH_IR_BYTES", 0)  # this small backward too
    ts.manual_seed(3)
    model = Net()
    x = ts.randn(6, 12)
    before = set(child_builds._building)  # (other tests' children, never waited for)
    compiled = ts.jit.compile(model, (x,), backward=True)
    mask, graph, plan = compiled._speculated
    keys = sorted(set(child_builds._building) - before)
    assert len(keys) == (1 if processes == "1" else 0)  # the backward's code, compiling in a child
    assert mask == (True,) * 4 + (False,)  # the parameters, not the float input x
    expected = gradients(model, model, x)
    got = gradients(model, compiled, x)
    assert compiled._speculated is None and mask in compiled._variants
    assert compiled._variants[mask].graph is graph
    for name, g in expected.items():
        np.testing.assert_allclose(got[name], g, rtol=1e-5, atol=1e-6)
    variant = compiled._variants[mask].executable
    assert variant.mode == "native"
    key = emit._key(variant.graph, variant.plan)
    assert lookup(key) is not None and not child_builds.building(key)
    if processes == "1":
        assert keys == [key]


def test_another_mask_compiles_its_own_variant():
    """An input that requires grad asks for a variant the speculation did not plan."""
    ts.manual_seed(4)
    model = Net()
    x = ts.randn(6, 12)
    compiled = ts.jit.compile(model, (x,), backward=True)
    x.requires_grad_(True)
    compiled(x).sum().backward()
    reference = x.grad.numpy().copy()
    x.grad = None
    model(x).sum().backward()
    np.testing.assert_allclose(reference, x.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert compiled._speculated is None
