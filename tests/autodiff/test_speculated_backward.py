"""`compile(..., backward=True)` plans the backward a training step asks for (every parameter's gradient)
with the forward and compiles both at once, one of them in a child process when that finishes sooner:
the first backward finds its code in the object cache, and gradients equal eager's with or without
child processes."""
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
    monkeypatch.setattr(emit, "CHILD_START", 0.01)  # a child pays for these small modules too
    ts.manual_seed(3)
    model = Net()
    x = ts.randn(6, 12)
    keys, build = [], child_builds.build_object
    monkeypatch.setattr(child_builds, "build_object", lambda key, *args: (keys.append(key), build(key, *args)))
    compiled = ts.jit.compile(model, (x,), backward=True)
    mask, graph, plan = compiled._speculated
    forward = emit._key(compiled.executable.graph, compiled.executable.plan)
    assert keys == ([forward] if processes == "1" else [])  # the smaller module, compiled by a child
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
    assert lookup(key) is not None and lookup(forward) is not None and not child_builds.building(forward)


def test_the_pair_is_split_by_its_compile_times(monkeypatch):
    """A child gets one module when that finishes sooner than compiling both here: the smaller, for a
    child starts later; two small modules both compile here."""
    started, here = [], []
    monkeypatch.setattr(emit, "emit_module", lambda plan: plan)
    monkeypatch.setattr(emit, "declared_functions", lambda module: set())
    monkeypatch.setattr(emit, "_key", lambda graph, plan: graph)
    monkeypatch.setattr(emit, "lookup", lambda key: None)
    monkeypatch.setattr(emit.child_builds, "enabled", lambda: True)
    monkeypatch.setattr(emit.child_builds, "build_object", lambda key, text, declared: started.append(key))
    monkeypatch.setattr(emit, "cached_object", lambda key, compile_it: here.append(key))
    per_second = int(1 / emit.MODEL_IR_SECONDS_PER_BYTE)
    emit.compile_ahead([("forward", "x" * int(0.6 * per_second)), ("backward", "x" * int(1.1 * per_second))])
    assert (started, here) == (["forward"], ["backward"])
    started.clear(), here.clear()
    emit.compile_ahead([("forward", "x" * int(0.05 * per_second)), ("backward", "x" * int(0.1 * per_second))])
    assert (started, here) == ([], ["forward", "backward"])


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
