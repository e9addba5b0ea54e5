"""nn.Module and the containers: registration, traversal order, state_dict / load_state_dict,
train/eval, zero_grad, apply, to(dtype), hooks and repr, checked by hand and against PyTorch."""
from collections import OrderedDict

import numpy as np
import pytest

import tscript as ts
from tests.conftest import assert_close
from tscript import nn


class Scale(nn.Module):
    """A parameter, a persistent and a non-persistent buffer, no children."""

    def __init__(self, n=2):
        super().__init__()
        self.weight = nn.Parameter(ts.ones(n))
        self.register_buffer("running", ts.zeros(n))
        self.register_buffer("cache", ts.zeros(n), persistent=False)

    def forward(self, x):
        return x * self.weight + self.running


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = Scale(3)
        self.body = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
        self.head = nn.Linear(2, 1, bias=False)
        self.register_buffer("steps", ts.tensor(0))

    def forward(self, x):
        return self.head(self.body(self.scale(x)))


STATE_KEYS = ["steps", "scale.weight", "scale.running", "body.0.weight", "body.0.bias", "body.1.weight",
              "body.1.bias", "head.weight"]


# -- registration ---------------------------------------------------------------------------------------------

def test_assignment_registers_parameters_buffers_and_modules():
    m = Scale()
    assert list(m._parameters) == ["weight"] and list(m._buffers) == ["running", "cache"]
    m.child = nn.Identity()
    m.plain = ts.zeros(1)   # a plain tensor is an attribute, not a buffer
    assert "child" in m._modules and "plain" not in m._buffers
    m.running = ts.ones(2)  # assigning to a buffer name replaces the buffer
    assert m._buffers["running"].tolist() == [1.0, 1.0]
    m.weight = None         # a parameter may be set to None, not to a plain tensor
    assert m._parameters["weight"] is None and list(m.parameters()) == []
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'weight'"):
        m.weight = ts.zeros(2)
    del m.child
    assert "child" not in m._modules


def test_registration_errors():
    m = Scale()
    with pytest.raises(KeyError, match="attribute 'forward' already exists"):
        m.register_buffer("forward", ts.zeros(1))
    with pytest.raises(KeyError, match="be empty or contain"):
        m.register_parameter("a.b", None)
    with pytest.raises(TypeError, match="parameter name should be a string. Got int"):
        m.register_parameter(1, None)
    with pytest.raises(TypeError, match="cannot assign 'Tensor' object to parameter 'p'"):
        m.register_parameter("p", ts.zeros(1))
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        m.add_module("x", 3)

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(ts.zeros(1))

    with pytest.raises(AttributeError, match="cannot assign parameters before Module.__init__\\(\\) call"):
        Early()


def test_missing_attribute_and_forward():
    with pytest.raises(AttributeError, match="'Scale' object has no attribute 'nope'"):
        Scale().nope
    with pytest.raises(NotImplementedError, match='Module \\[Module\\] is missing the required "forward" function'):
        nn.Module()(ts.zeros(1))


# -- traversal -----------------------------------------------------------------------------------------------

def test_named_traversal_order():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == ["scale.weight", "body.0.weight", "body.0.bias",
                                                       "body.1.weight", "body.1.bias", "head.weight"]
    assert [n for n, _ in net.named_buffers()] == ["steps", "scale.running", "scale.cache"]
    assert [n for n, _ in net.named_modules()] == ["", "scale", "body", "body.0", "body.1", "head"]
    assert [n for n, _ in net.named_children()] == ["scale", "body", "head"]
    assert [n for n, _ in net.named_parameters(prefix="net", recurse=False)] == []
    assert [n for n, _ in net.scale.named_parameters(prefix="s")] == ["s.weight"]
    assert len(list(net.parameters())) == 6 and len(list(net.modules())) == 6


def test_shared_modules_and_parameters_appear_once():
    shared = nn.Linear(2, 2)
    seq = nn.Sequential(shared, shared)
    assert len(list(seq.parameters())) == 2 and [n for n, _ in seq.named_modules()] == ["", "0"]
    assert [n for n, _ in seq.named_modules(remove_duplicate=False)] == ["", "0", "1"]
    assert list(seq.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]


def test_get_submodule_and_parameter():
    net = Net()
    assert net.get_submodule("body.1") is net.body[1] and net.get_submodule("") is net
    assert net.get_parameter("body.0.bias") is net.body[0].bias
    with pytest.raises(AttributeError, match="Sequential has no attribute `7`"):
        net.get_submodule("body.7")


# -- state_dict ----------------------------------------------------------------------------------------------

def test_state_dict_keys_include_persistent_buffers_only():
    sd = Net().state_dict()
    assert isinstance(sd, OrderedDict) and list(sd) == STATE_KEYS
    assert all(not v.requires_grad for v in sd.values())
    kept = Net().state_dict(keep_vars=True)
    assert kept["head.weight"].requires_grad


def test_state_dict_shares_memory_with_the_parameters():
    net = Net()
    sd = net.state_dict()
    with ts.no_grad():
        net.head.weight.fill_(3.0)
    assert sd["head.weight"].tolist() == [[3.0, 3.0]]


def test_load_state_dict_round_trip_gives_identical_outputs():
    ts.manual_seed(0)
    a, b = Net(), Net()
    x = ts.randn(5, 3)
    assert not np.allclose(a(x).detach().numpy(), b(x).detach().numpy())
    result = b.load_state_dict(a.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    np.testing.assert_array_equal(a(x).detach().numpy(), b(x).detach().numpy())
    assert b.head.weight.requires_grad and isinstance(b.head.weight, nn.Parameter)


def test_load_state_dict_strict_errors_name_the_keys():
    net = Net()
    sd = net.state_dict()
    del sd["body.0.bias"]
    sd["extra"] = ts.zeros(1)
    with pytest.raises(RuntimeError) as info:
        net.load_state_dict(sd)
    text = str(info.value)
    assert text.startswith("Error(s) in loading state_dict for Net:\n\t")
    assert 'Missing key(s) in state_dict: "body.0.bias". ' in text
    assert 'Unexpected key(s) in state_dict: "extra". ' in text
    assert text.index("Missing") < text.index("Unexpected")
    result = net.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["body.0.bias"] and result.unexpected_keys == ["extra"]


def test_load_state_dict_shape_mismatch_fails_even_when_not_strict():
    net = Net()
    sd = net.state_dict()
    sd["head.weight"] = ts.zeros(3, 2)
    for strict in (True, False):
        with pytest.raises(RuntimeError, match="size mismatch for head.weight: copying a param with shape "
                                               ".*3, 2.* from checkpoint, the shape in current model is .*1, 2"):
            net.load_state_dict(sd, strict=strict)
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        net.load_state_dict([("head.weight", ts.zeros(1, 2))])


def test_load_state_dict_casts_and_copies_in_place():
    net = Scale()
    weight = net.weight
    net.load_state_dict({"weight": ts.tensor([2, 3]), "running": ts.ones(2, dtype=ts.float64)})
    assert net.weight is weight and net.weight.dtype == ts.float32 and net.weight.tolist() == [2.0, 3.0]
    assert net.running.dtype == ts.float32


def test_load_state_dict_assign_replaces_the_tensors():
    net = Scale()
    new = ts.tensor([5.0, 6.0])
    net.load_state_dict({"weight": new, "running": ts.ones(2)}, assign=True)
    assert isinstance(net.weight, nn.Parameter) and net.weight.requires_grad
    assert net.weight.tolist() == [5.0, 6.0]
    new[0] = 7.0    # assign shares the given storage
    assert net.weight.tolist() == [7.0, 6.0]


def test_non_persistent_buffer_key_is_unexpected():
    net = Scale()
    sd = dict(net.state_dict(), cache=ts.zeros(2))
    with pytest.raises(RuntimeError, match='Unexpected key\\(s\\) in state_dict: "cache"'):
        net.load_state_dict(sd)


def test_save_and_load_state_dict_through_a_file(tmp_path):
    ts.manual_seed(1)
    net, fresh = Net(), Net()
    path = tmp_path / "net.pt"
    ts.save(net.state_dict(), path)
    fresh.load_state_dict(ts.load(path))
    x = ts.randn(2, 3)
    np.testing.assert_array_equal(net(x).detach().numpy(), fresh(x).detach().numpy())


# -- modes, grads, apply, to ---------------------------------------------------------------------------------

def test_train_and_eval_reach_every_submodule():
    net = Net()
    assert net.training and net.body[0].training
    assert net.eval() is net and not net.training and not net.body[1].training
    net.train()
    assert all(m.training for m in net.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train("yes")


def test_train_calls_overridden_train_of_children():
    class Frozen(nn.Linear):
        def train(self, mode=True):
            return super().train(False)

    seq = nn.Sequential(nn.Linear(1, 1), Frozen(1, 1))
    seq.train()
    assert seq.training and seq[0].training and not seq[1].training


def test_zero_grad_and_requires_grad():
    net = Net()
    net(ts.ones(1, 3)).sum().backward()
    grad = net.head.weight.grad
    assert grad is not None
    net.zero_grad(set_to_none=False)
    assert net.head.weight.grad is grad and grad.abs().sum().item() == 0
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


def test_apply_visits_children_first():
    order = []
    Net().apply(lambda m: order.append(type(m).__name__))
    assert order == ["Scale", "Linear", "Linear", "Sequential", "Linear", "Net"]


def test_to_dtype_converts_floating_tensors_in_place():
    net = Net()
    weight = net.head.weight
    assert net.to(ts.float64) is net
    assert net.head.weight is weight and weight.dtype == ts.float64 and weight.requires_grad
    assert net.scale.running.dtype == ts.float64 and net.steps.dtype == ts.int64
    assert net(ts.ones(1, 3, dtype=ts.float64)).dtype == ts.float64
    net.float()
    assert weight.dtype == ts.float32
    with pytest.raises(TypeError, match="only accepts floating point"):
        net.to(ts.int64)
    with pytest.raises(RuntimeError):
        net.to("cuda")


# -- hooks ----------------------------------------------------------------------------------------------------

def test_forward_hooks_see_and_replace_inputs_and_outputs():
    m = nn.Identity()
    seen = []
    pre = m.register_forward_pre_hook(lambda mod, args: args[0] * 2)
    post = m.register_forward_hook(lambda mod, args, out: seen.append((args[0].item(), out.item())))
    assert m(ts.tensor(3.0)).item() == 6.0 and seen == [(6.0, 6.0)]
    m.register_forward_hook(lambda mod, args, out: out + 1)
    assert m(ts.tensor(1.0)).item() == 3.0
    pre.remove()
    post.remove()
    assert m(ts.tensor(1.0)).item() == 2.0 and len(seen) == 2


def test_hooks_with_kwargs_and_prepend():
    class AddBias(nn.Module):
        def forward(self, x, bias=0.0):
            return x + bias

    m = AddBias()
    order = []
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"bias": 10.0}), with_kwargs=True)
    m.register_forward_hook(lambda mod, args, kwargs, out: order.append(("kw", kwargs["bias"])), with_kwargs=True)
    m.register_forward_hook(lambda mod, args, out: order.append("first"), prepend=True)
    assert m(ts.tensor(1.0)).item() == 11.0
    assert order == ["first", ("kw", 10.0)]
    m.register_forward_pre_hook(lambda mod, args, kwargs: 1, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple of"):
        m(ts.tensor(1.0))


# -- containers -----------------------------------------------------------------------------------------------

def test_sequential_indexing_slicing_and_editing():
    a, b, c = nn.Linear(1, 2), nn.Linear(2, 3), nn.Linear(3, 4)
    seq = nn.Sequential(a, b)
    assert len(seq) == 2 and seq[0] is a and seq[-1] is b and list(seq) == [a, b]
    seq.append(c)
    assert list(seq._modules) == ["0", "1", "2"]
    tail = seq[1:]
    assert isinstance(tail, nn.Sequential) and list(tail._modules) == ["1", "2"] and tail[0] is b
    assert seq(ts.ones(5, 1)).shape == (5, 4)
    del seq[0]
    assert list(seq._modules) == ["0", "1"] and seq[0] is b
    seq.insert(0, a)
    assert list(seq) == [a, b, c]
    seq[1] = nn.Identity()
    assert isinstance(seq[1], nn.Identity)
    assert seq.pop(1) is not None and list(seq) == [a, c]
    assert list(nn.Sequential(a) + nn.Sequential(c)) == [a, c]
    with pytest.raises(IndexError, match="index 3 is out of range"):
        seq[3]
    with pytest.raises(IndexError, match="Index out of range: 9"):
        seq.insert(9, a)


def test_sequential_from_ordered_dict():
    seq = nn.Sequential(OrderedDict([("inp", nn.Linear(2, 3)), ("out", nn.Linear(3, 1))]))
    assert list(seq.state_dict()) == ["inp.weight", "inp.bias", "out.weight", "out.bias"]
    assert seq.out is seq[1] and seq[:1].inp is seq.inp
    del seq[0]   # as PyTorch: deleting renumbers the remaining modules
    assert list(seq._modules) == ["0"]


def test_module_list_and_dict():
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(layers) == 3 and [n for n, _ in layers.named_children()] == ["0", "1", "2"]
    layers.append(nn.Identity())
    layers.extend([nn.Identity()])
    layers.insert(1, nn.Flatten())
    assert isinstance(layers[1], nn.Flatten) and len(layers) == 6
    del layers[1]
    assert [type(m).__name__ for m in layers] == ["Linear"] * 3 + ["Identity"] * 2
    assert isinstance(layers[1:3], nn.ModuleList) and len(layers[1:3]) == 2
    assert len(list(layers.parameters())) == 6
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable"):
        layers.extend(3)

    heads = nn.ModuleDict({"b": nn.Linear(1, 1), "a": nn.Identity()})
    heads["c"] = nn.Flatten()
    assert list(heads) == ["b", "a", "c"] and "a" in heads and len(heads) == 3
    assert [k for k, _ in heads.items()] == ["b", "a", "c"]
    assert isinstance(heads.pop("a"), nn.Identity) and list(heads.keys()) == ["b", "c"]


def test_parameter_list():
    plist = nn.ParameterList([nn.Parameter(ts.ones(2)), ts.zeros(3)])   # tensors are wrapped
    assert len(plist) == 2 and isinstance(plist[1], nn.Parameter) and plist[1].requires_grad
    plist.append(nn.Parameter(ts.ones(1)))
    assert [n for n, _ in plist.named_parameters()] == ["0", "1", "2"]
    assert [p.numel() for p in plist] == [2, 3, 1]


# -- repr -----------------------------------------------------------------------------------------------------

def test_repr_of_a_nested_model_by_hand():
    model = nn.Sequential(nn.Linear(2, 3), nn.ModuleList([nn.Identity(), nn.Identity()]), nn.Sequential())
    assert repr(model) == (
        "Sequential(\n"
        "  (0): Linear(in_features=2, out_features=3, bias=True)\n"
        "  (1): ModuleList(\n"
        "    (0-1): 2 x Identity()\n"
        "  )\n"
        "  (2): Sequential()\n"
        ")")


def build_model(lib):
    """The same nested model in PyTorch or tscript."""
    class Block(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(3, 4)
            self.register_buffer("scale", lib.ones(1))
            self.layers = lib.nn.ModuleList([lib.nn.Linear(4, 4), lib.nn.Linear(4, 4), lib.nn.Identity(),
                                             lib.nn.Sequential(lib.nn.Linear(1, 1)),
                                             lib.nn.Sequential(lib.nn.Linear(1, 1))])
            self.heads = lib.nn.ModuleDict({"a": lib.nn.Linear(4, 1, bias=False), "b": lib.nn.Flatten()})
            self.plist = lib.nn.ParameterList([lib.nn.Parameter(lib.ones(2, 3)),
                                               lib.nn.Parameter(lib.ones(2).double())])
            self.single = lib.nn.ParameterList([lib.nn.Parameter(lib.ones(2))])
            self.pdict = lib.nn.ParameterDict({"w": lib.nn.Parameter(lib.ones(2, 3))})
            self.seq = lib.nn.Sequential(OrderedDict(first=lib.nn.Linear(4, 2), second=lib.nn.Identity()))
            self.empty = lib.nn.Sequential()
            self.unflatten = lib.nn.Unflatten(1, (2, 2))

        def forward(self, x):
            return x

    return Block()


def test_repr_matches_pytorch(oracle):
    expected = repr(build_model(oracle)).replace("torch", "tscript")
    assert repr(build_model(ts)) == expected


def test_traversal_and_state_dict_keys_match_pytorch(oracle):
    t_model, s_model = build_model(oracle), build_model(ts)
    for method in ("named_parameters", "named_buffers", "named_modules", "named_children"):
        assert [n for n, _ in getattr(s_model, method)()] == [n for n, _ in getattr(t_model, method)()], method
    assert list(s_model.state_dict()) == list(t_model.state_dict())


def test_pytorch_state_dict_loads_and_gives_the_same_outputs(oracle):
    oracle.manual_seed(0)
    t_model = oracle.nn.Sequential(oracle.nn.Linear(3, 5), oracle.nn.Linear(5, 2))
    s_model = nn.Sequential(nn.Linear(3, 5), nn.Linear(5, 2))
    s_model.load_state_dict({k: ts.tensor(v.detach().numpy()) for k, v in t_model.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    assert_close(s_model(ts.tensor(x)), t_model(oracle.tensor(x)), rtol=1e-5, atol=1e-6)


def test_load_state_dict_error_text_matches_pytorch(oracle):
    def message(lib, sd):
        model = lib.nn.Sequential(lib.nn.Linear(2, 2))
        with pytest.raises(RuntimeError) as info:
            model.load_state_dict(sd)
        return str(info.value)

    keys = {"0.weight": (2, 2), "1.bias": (2,)}
    t_text = message(oracle, {k: oracle.zeros(s) for k, s in keys.items()})
    s_text = message(ts, {k: ts.zeros(s) for k, s in keys.items()})
    assert s_text == t_text
