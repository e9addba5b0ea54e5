"""A convolution's native code has only the path its weight's static type calls for: a model of ordinary
convolutions never imports the depthwise kernel (nor the few-channel GEMM where the packed one serves),
so a cold load compiles fewer kernel-library parts; a weight that does not match its type at run time
is planned by the executor, which gives eager's result."""
import numpy as np

import tscript as ts
from tscript import nn
from tscript_runtime.native import emit
from tscript_runtime.native.cache import lookup


def imports(c) -> set:
    """What the model's object imports (from the object cache, where linking found it)."""
    found = lookup(emit._key(c.executable.graph, c.executable.plan))
    assert found is not None
    return found[1]


def compiled(model, x):
    c = ts.jit.compile(model.eval(), (x,))
    assert c.executable.entry is not None, c.explain()
    return c


def test_plain_convolutions_import_no_depthwise_kernel():
    ts.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1))
    x = ts.randn(2, 3, 10, 10)
    c = compiled(model, x)
    ir_text = c.llvm_ir
    assert "_columns" in ir_text and "_direct" not in ir_text
    assert "tscript_depthwise2d_scratch_f32" not in imports(c) and "tscript_gemm_nn_f32" not in imports(c)
    np.testing.assert_allclose(c(x).numpy(), model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_depthwise_and_plain_get_one_path_each():
    ts.manual_seed(1)
    model = nn.Sequential(nn.Conv2d(4, 4, 3, padding=1, groups=4), nn.ReLU(), nn.Conv2d(4, 6, 1))
    x = ts.randn(2, 4, 9, 9)
    c = compiled(model, x)
    assert "_direct" in c.llvm_ir and "_columns" in c.llvm_ir
    np.testing.assert_allclose(c(x).numpy(), model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_a_weight_unlike_its_type_runs_in_the_executor():
    ts.manual_seed(2)
    model = nn.Conv2d(1, 4, 3, padding=1)  # one input channel: the direct (depthwise) kernel
    x = ts.randn(2, 1, 8, 8)
    c = compiled(model, x)
    assert "_direct" in c.llvm_ir
    entry = c.executable.entry
    tree = c._tree
    args = tree + [x.numpy()]
    assert entry.prepare(args)
    # what the planner sees when the weight has no longer one input channel per group
    step = next(s for s in entry.layout.steps if getattr(s, "direct", None) is not None)
    step.direct = False
    entry._plans.clear()
    assert entry.run(args) is None  # not planned natively: the executor runs it
    np.testing.assert_allclose(c.executable.run(args)[0], model(x).detach().numpy(), rtol=1e-4, atol=1e-5)
    step.direct = True
