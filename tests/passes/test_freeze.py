"""tscript.jit.freeze and the batch-norm folding pass."""
import numpy as np
import pytest

import tscript as ts
from tests.conftest import assert_close
from tests.passes.helpers import check_pass, cnn_bn, run_graph
from tscript import nn
from tscript.ir import verify
from tscript.ir.passes.fold_batch_norm import fold_batch_norm


def _frozen(model, *inputs):
    model.eval()
    with ts.no_grad():
        return ts.jit.freeze(ts.jit.trace(model, inputs))


def _kinds(graph) -> set:
    return {n.kind for n in graph.all_nodes()}


def test_conv_bn_relu_freezes_to_one_conv_and_matches_eager():
    ts.manual_seed(0)
    model, (x,) = cnn_bn()
    model = model[:3]  # Conv2d, BatchNorm2d, ReLU
    frozen = _frozen(model, x)
    verify(frozen.graph)
    assert _kinds(frozen.graph) == {"prim::Constant", "aten::conv2d", "aten::relu"}
    for batch in (2, 5):
        x = ts.randn(batch, 3, 6, 6)
        with ts.no_grad():
            assert_close(frozen(x), model(x), rtol=1e-5, atol=1e-5)


def test_whole_cnn_folds_every_batch_norm_and_drops_attributes():
    ts.manual_seed(1)
    model, (x,) = cnn_bn()
    frozen = _frozen(model, x)
    assert _kinds(frozen.graph) == {"prim::Constant", "aten::conv2d", "aten::relu", "aten::flatten",
                                    "aten::linear"}
    assert len(frozen.graph.constants) == 6  # weight and bias of each conv/linear, nothing left over
    with ts.no_grad():
        assert_close(frozen(x), model(x), rtol=1e-5, atol=1e-5)


def test_frozen_module_keeps_the_values_it_was_frozen_with():
    ts.manual_seed(2)
    model = nn.Sequential(nn.Linear(3, 2))
    x = ts.randn(4, 3)
    frozen = _frozen(model, x)
    with ts.no_grad():
        before = model(x)
        model[0].weight.mul_(2.0)
        assert_close(frozen(x), before)


def test_dropout_leaves_no_node_in_eval():
    ts.manual_seed(3)
    model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.ReLU(), nn.Dropout(0.3), nn.Linear(8, 2))
    x = ts.randn(3, 4)
    frozen = _frozen(model, x)
    assert _kinds(frozen.graph) == {"prim::Constant", "aten::linear", "aten::relu"}
    with ts.no_grad():
        assert_close(frozen(x), model(x))


class _Counter(nn.Module):
    """A module that writes one of its buffers on every call (as running statistics do)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("calls", ts.zeros(1))
        self.register_buffer("scale", ts.tensor([2.0]))

    def forward(self, x):
        self.calls.add_(1)
        return x * self.scale


def test_buffer_written_in_place_stays_an_attribute():
    model = _Counter()
    frozen = _frozen(model, ts.ones(2))
    kinds = [n.kind for n in frozen.graph.all_nodes()]
    assert kinds.count("prim::GetAttr") == 1 and "aten::add_" in kinds
    calls = model.calls.numpy().copy()
    with ts.no_grad():
        assert_close(frozen(ts.ones(2)), ts.tensor([2.0, 2.0]))
    assert model.calls.numpy()[0] == calls[0] + 1


def test_frozen_module_saves_and_loads(tmp_path):
    ts.manual_seed(4)
    model, (x,) = cnn_bn()
    frozen = _frozen(model, x)
    ts.jit.save(frozen, tmp_path / "frozen.tsm")
    loaded = ts.jit.load(tmp_path / "frozen.tsm")
    with ts.no_grad():
        assert_close(loaded(x), model(x), rtol=1e-5, atol=1e-5)


def test_freeze_needs_eval_mode_and_a_script_module():
    model = nn.Linear(2, 2)
    traced = ts.jit.trace(model, ts.randn(1, 2))
    with pytest.raises(RuntimeError, match=r"only implemented for modules in eval mode.*call \.eval\(\)"):
        ts.jit.freeze(traced)
    with pytest.raises(RuntimeError, match="Freezing expects a ScriptModule"):
        ts.jit.freeze(model.eval())


# -- fold_batch_norm as an IR pass ----------------------------------------------------------------------------
CONV = """
graph(%x : Float(1, 2, 3, 3)):
  %w : Float(2, 2, 1, 1) = prim::Constant[value=<Tensor w>]()
  %b : Float(2) = prim::Constant[value=<Tensor b>]()
  %s : List[int] = prim::Constant[value=[1, 1]]()
  %p : List[int] = prim::Constant[value=[0, 0]]()
  %one : int = prim::Constant[value=1]()
  %y : Float(1, 2, 3, 3) = aten::conv2d(%x, %w, %b, %s, %p, %s, %one)
  %k : {k_type} = prim::Constant[value=<Tensor k>]()
  %z : Float(1, 2, 3, 3) = {op}
  return ({returns})
"""
CONSTANTS = {"w": np.array([[1, 2], [3, 4]], np.float32).reshape(2, 2, 1, 1), "b": np.array([1, -1], np.float32)}


@pytest.mark.parametrize("op, k", [
    ("aten::mul(%y, %k)", np.array([2, 3], np.float32).reshape(1, 2, 1, 1)),
    ("aten::mul(%k, %y)", np.array([2, 3], np.float32).reshape(2, 1, 1)),
    ("aten::add(%y, %k, %one)", np.array([2, 3], np.float32).reshape(1, 2, 1, 1)),
    ("aten::add(%k, %y, %one)", np.array([5], np.float32)),
    ("aten::sub(%y, %k, %one)", np.array([2, 3], np.float32).reshape(1, 2, 1, 1)),
    ("aten::div(%y, %k, %none)", np.array([2, 4], np.float32).reshape(1, 2, 1, 1)),
])
def test_per_channel_affine_folds_into_conv(op, k):
    text = CONV.format(k_type=f"Float({', '.join(map(str, k.shape))})", op=op, returns="%z")
    text = text.replace("  %one", "  %none : NoneType = prim::Constant()\n  %one")
    g = check_pass(fold_batch_norm, text, """
graph(%x : Float(1, 2, 3, 3)):
  %w : Float(2, 2, 1, 1) = prim::Constant[value=<Tensor w>]()
  %b : Float(2) = prim::Constant[value=<Tensor b>]()
  %s : List[int] = prim::Constant[value=[1, 1]]()
  %p : List[int] = prim::Constant[value=[0, 0]]()
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %w2 : Float(2, 2, 1, 1) = prim::Constant[value=<Tensor c3>]()
  %b2 : Float(2) = prim::Constant[value=<Tensor c4>]()
  %y : Float(1, 2, 3, 3) = aten::conv2d(%x, %w2, %b2, %s, %p, %s, %one)
  %k : Tensor = prim::Constant[value=<Tensor k>]()
  return (%y)
""".replace("%k : Tensor", f"%k : Float({', '.join(map(str, k.shape))})"), dict(CONSTANTS, k=k))
    x = np.random.default_rng(0).standard_normal((1, 2, 3, 3)).astype(np.float32)
    expected = run_graph(_parsed(text, k), [x])[0]
    np.testing.assert_allclose(run_graph(g, [x])[0], expected, rtol=1e-6, atol=1e-6)


def _parsed(text, k):
    from tscript.ir import parse_ir
    g = parse_ir(text)
    g.constants.update(CONSTANTS, k=k)
    return g


@pytest.mark.parametrize("why, op, k, returns", [
    ("varies along a spatial dim", "aten::mul(%y, %k)", np.ones((1, 2, 3, 1), np.float32), "%z"),
    ("another dtype", "aten::mul(%y, %k)", np.ones((1, 2, 1, 1), np.float64), "%z"),
    ("grows the rank", "aten::mul(%y, %k)", np.ones((1, 1, 2, 1, 1), np.float32), "%z"),
    ("conv output read twice", "aten::mul(%y, %k)", np.ones((1, 2, 1, 1), np.float32), "%z, %y"),
    ("divided by", "aten::div(%k, %y, %none)", np.ones((1, 2, 1, 1), np.float32), "%z"),
])
def test_non_per_channel_ops_do_not_fold(why, op, k, returns):
    text = CONV.format(k_type="Tensor", op=op, returns=returns).replace(
        "  %one", "  %none : NoneType = prim::Constant()\n  %one")
    check_pass(fold_batch_norm, text, text, dict(CONSTANTS, k=k), changed=False)


def test_linear_folds_along_its_last_dim():
    text = """
graph(%x : Float(4, 3)):
  %w : Float(2, 3) = prim::Constant[value=<Tensor w>]()
  %none : NoneType = prim::Constant()
  %y : Float(4, 2) = aten::linear(%x, %w, %none)
  %k : Float(2) = prim::Constant[value=<Tensor k>]()
  %z : Float(4, 2) = aten::mul(%y, %k)
  return (%z)
"""
    constants = {"w": np.arange(6, dtype=np.float32).reshape(2, 3), "k": np.array([2, -1], np.float32)}
    g = check_pass(fold_batch_norm, text, """
graph(%x : Float(4, 3)):
  %w : Float(2, 3) = prim::Constant[value=<Tensor w>]()
  %none : NoneType = prim::Constant()
  %w2 : Float(2, 3) = prim::Constant[value=<Tensor c2>]()
  %b2 : Float(2) = prim::Constant[value=<Tensor c3>]()
  %y : Float(4, 2) = aten::linear(%x, %w2, %b2)
  %k : Float(2) = prim::Constant[value=<Tensor k>]()
  return (%y)
""", constants)
    x = np.ones((4, 3), np.float32)
    np.testing.assert_allclose(run_graph(g, [x])[0], (x @ constants["w"].T) * constants["k"])
