"""Saved models: trace -> `tscript.jit.save` -> `tscript.jit.load` and `tscript_runtime.load` give
the eager results; the manifest, the signature (symbolic "batch", `dynamic=`), shared parameters,
thread safety, and an InputError for every wrong input."""
import hashlib
import io
import json
import zipfile

import numpy as np
import pytest

import tscript as ts
import tscript_runtime as rt
import tscript_runtime.model as rt_model
from tscript import nn
from tscript_runtime import InputError, ModelError
from tests.conftest import run_in_threads

RNG = np.random.default_rng(0)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 8), nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(ts.tanh(self.fc1(x)))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("scale", ts.full((4,), 2.0))
        self.register_buffer("shift", ts.arange(4).float(), persistent=False)

    def forward(self, x):
        return ts.relu(self.fc(x)) * self.scale + self.shift


class Nested(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Block()
        self.b = nn.Sequential(Block(), nn.Linear(4, 3))

    def forward(self, x):
        return self.b(self.a(x)) + ts.tensor([1.0, -2.0, 0.5])  # a tensor constant of the graph


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x, y):
        h = self.fc(x)
        return h.sum(1), {"h": h, "y": y * 2.0}


def scaled(x, alpha: float):
    return x * alpha + 1.0


def data(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def eager(fn, *arrays):
    """`fn` run eagerly on tscript tensors, outputs as numpy (containers kept)."""
    return _numpy(fn(*[ts.tensor(a) if isinstance(a, np.ndarray) else a for a in arrays]))


def _numpy(x):
    if isinstance(x, ts.Tensor):
        return x.detach().numpy()
    if isinstance(x, (tuple, list)):
        return type(x)(_numpy(v) for v in x)
    if isinstance(x, dict):
        return {k: _numpy(v) for k, v in x.items()}
    return x


def assert_same(got, expected):
    """Same structure, dtypes and values (to float32 tolerance)."""
    assert type(got) is type(expected), f"{type(got).__name__} != {type(expected).__name__}"
    if isinstance(expected, np.ndarray):
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    elif isinstance(expected, (tuple, list)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert_same(g, e)
    elif isinstance(expected, dict):
        assert list(got) == list(expected)
        for k in expected:
            assert_same(got[k], expected[k])
    else:
        assert got == expected


def saved(tmp_path, fn, example, **kwargs):
    path = tmp_path / "model.tsm"
    ts.jit.save(ts.jit.trace(fn, example), path, **kwargs)
    return path


@pytest.fixture
def mlp(tmp_path):
    module = MLP()
    return module, saved(tmp_path, module, ts.randn(3, 4))


# -- round trips ------------------------------------------------------------------------------------

@pytest.mark.parametrize("batch", [3, 1, 7])
def test_mlp_gives_eager_results_in_both_loaders(mlp, batch):
    module, path = mlp
    x = data(batch, 4)
    expected = eager(module, x)
    assert_same(rt.load(path).run(x), expected)
    assert_same(_numpy(ts.jit.load(path)(ts.tensor(x))), expected)


@pytest.mark.parametrize("batch", [3, 5])
def test_tuple_and_dict_outputs(tmp_path, batch):
    module = TwoHeads()
    path = saved(tmp_path, module, (ts.randn(3, 4), ts.randn(3, 2)))
    x, y = data(batch, 4), data(batch, 2)
    expected = eager(module, x, y)
    assert_same(rt.load(path).run(x, y), expected)
    assert_same(_numpy(ts.jit.load(path)(ts.tensor(x), ts.tensor(y))), expected)


def test_function_with_a_scalar_argument(tmp_path):
    traced = ts.jit.trace(scaled, (ts.randn(3, 4), 2.5))
    path = tmp_path / "f.tsm"
    ts.jit.save(traced, path)
    model, loaded = rt.load(path), ts.jit.load(path)
    assert isinstance(loaded, ts.jit.ScriptFunction) and loaded.name == "scaled"
    x = data(6, 4)
    assert_same(model.run(x, 2.5), eager(scaled, x, 2.5))
    assert_same(_numpy(loaded(ts.tensor(x), 2.5)), eager(scaled, x, 2.5))
    # Whatever the trace made of the scalar, the saved model computes what the traced function does.
    assert_same(model.run(x, -1.0), _numpy(traced(ts.tensor(x), -1.0)))
    assert_same(model.run(x, 3), _numpy(traced(ts.tensor(x), 3)))  # an int where a float is expected
    assert str(model.signature) == "forward(x: float32[batch, 4], alpha: float) -> float32[batch, 4]"


@pytest.mark.parametrize("batch", [3, 2])
def test_nested_modules_with_buffers_and_a_constant(tmp_path, batch):
    module = Nested()
    path = saved(tmp_path, module, ts.randn(3, 4))
    x = data(batch, 4)
    assert_same(rt.load(path).run(x), eager(module, x))
    assert_same(_numpy(ts.jit.load(path)(ts.tensor(x))), eager(module, x))
    with zipfile.ZipFile(path) as zf:
        assert "constants/c0.npy" in zf.namelist()


def test_loaded_script_module_keeps_the_module_api(tmp_path):
    module = Nested().eval()
    path = saved(tmp_path, module, ts.randn(3, 4))
    loaded = ts.jit.load(path)
    assert isinstance(loaded, ts.jit.ScriptModule) and loaded.original_name == "Nested"
    assert list(loaded.state_dict()) == list(module.state_dict())
    assert list(dict(loaded.named_buffers())) == list(dict(module.named_buffers()))  # non-persistent kept
    for (name, p), (_, q) in zip(loaded.named_parameters(), module.named_parameters()):
        assert isinstance(p, nn.Parameter) and p.requires_grad
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    assert not loaded.training and not getattr(loaded.b, "0").training
    assert loaded.b.original_name == "Sequential"
    assert str(loaded.graph) == rt.load(path).ir()
    assert "torch.linear(x, self.a.fc.weight, self.a.fc.bias)" in loaded.code


def test_loaded_module_trains_like_the_original(tmp_path):
    module = MLP()
    loaded = ts.jit.load(saved(tmp_path, module, ts.randn(3, 4)))
    x = ts.tensor(data(5, 4))
    loaded(x).sum().backward()
    module(x).sum().backward()
    np.testing.assert_allclose(loaded.fc1.weight.grad.numpy(), module.fc1.weight.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_save_to_a_file_object_and_load_from_one():
    module = MLP()
    buf = io.BytesIO()
    ts.jit.save(ts.jit.trace(module, ts.randn(2, 4)), buf)
    x = data(2, 4)
    buf.seek(0)
    assert_same(rt.load(buf).run(x), eager(module, x))


def test_save_refuses_what_is_not_compiled(tmp_path):
    with pytest.raises(TypeError, match="expects a ScriptModule or ScriptFunction .*got MLP"):
        ts.jit.save(MLP(), tmp_path / "m.tsm")


# -- the file ---------------------------------------------------------------------------------------

def test_manifest_describes_everything(mlp):
    _, path = mlp
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        manifest = json.loads(zf.read("manifest.json"))
        contents = {n: zf.read(n) for n in names}
    assert manifest["format"] == "tscript-model" and manifest["version"] == 2
    assert manifest["producer"] == f"tscript {ts.__version__}"
    assert manifest["kind"] == "module" and manifest["name"] == "MLP"
    assert names == {"manifest.json", "forward.ir", "forward.graph.json", "params/fc1.weight.npy",
                     "params/fc1.bias.npy", "params/fc2.weight.npy", "params/fc2.bias.npy"}
    for name in names - {"manifest.json"}:
        assert manifest["members"][name]["sha256"] == hashlib.sha256(contents[name]).hexdigest()
    assert manifest["params"]["fc1.weight"] == {
        "member": "params/fc1.weight.npy", "dtype": "float32", "shape": [8, 4], "kind": "parameter",
        "requires_grad": True, "persistent": True}
    forward = manifest["entry_points"]["forward"]
    assert forward["inputs"] == [{"name": "x", "type": "tensor", "dtype": "float32", "shape": ["batch", 4],
                                  "example_shape": [3, 4]}]
    assert forward["outputs"] == [{"type": "tensor", "dtype": "float32", "shape": ["batch", 3],
                                   "example_shape": [3, 3]}]
    assert forward["self"] is True and forward["plan"] is None
    assert contents["forward.ir"].decode().startswith("graph(%self : __module__.MLP")
    assert json.loads(contents["forward.graph.json"])["format"] == "tscript-graph"
    for name in names:
        if name.endswith(".npy"):  # plain arrays: loadable without pickle
            assert np.load(io.BytesIO(contents[name]), allow_pickle=False).dtype == np.float32


def test_model_introspection(mlp):
    _, path = mlp
    model = rt.load(path)
    assert list(model.entry_points) == ["forward"]
    assert model.signature is model.entry_points["forward"].signature
    assert str(model.signature) == "forward(x: float32[batch, 4]) -> float32[batch, 3]"
    assert model.signature.input_names == ["x"]
    assert model.ir().startswith("graph(%self") and model.ir("forward") == model.ir()
    assert {k: v.shape for k, v in model.params.items()} == {
        "fc1.weight": (8, 4), "fc1.bias": (8,), "fc2.weight": (3, 8), "fc2.bias": (3,)}
    with pytest.raises(ModelError, match="has no entry point 'backward' \\(it has: forward\\)"):
        model.run_method("backward", data(2, 4))
    with pytest.raises(ModelError, match="this model was saved without a backward entry point"):
        model.run_with_grad(data(2, 4))


def test_tied_weights_stay_tied(tmp_path):
    module = nn.Sequential(nn.Linear(4, 4, bias=False), nn.Linear(4, 4, bias=False))
    module[1].weight = module[0].weight
    path = saved(tmp_path, module, ts.randn(2, 4))
    with zipfile.ZipFile(path) as zf:
        assert [n for n in zf.namelist() if n.startswith("params/")] == ["params/0.weight.npy"]
    model = rt.load(path)
    assert model.params["0.weight"] is model.params["1.weight"]
    loaded = ts.jit.load(path)
    assert loaded.state_dict().keys() == module.state_dict().keys()
    params = dict(loaded.named_parameters(remove_duplicate=False))
    assert params["0.weight"] is params["1.weight"]
    x = data(2, 4)
    assert_same(model.run(x), eager(module, x))


def test_writing_params_in_place_changes_the_next_run(mlp):
    module, path = mlp
    model = rt.load(path)
    x = data(4, 4)
    model.params["fc2.bias"][:] = 10.0
    model.params["fc1.weight"] *= 2
    with ts.no_grad():
        module.fc2.bias.fill_(10.0)
        module.fc1.weight.mul_(2)
    assert_same(model.run(x), eager(module, x))


def test_assigning_params_replaces_them_for_the_next_run(mlp):
    """`model.params[name] = array` is seen by the next run (the entry reads the arrays again only after
    such a change), writes into the new array too; a transposed array is taken as a C-contiguous copy."""
    module, path = mlp
    model = rt.load(path)
    x = data(4, 4)
    model.run(x)
    weight = np.full(model.params["fc1.weight"].shape[::-1], 0.5, np.float32).T  # (not C-contiguous)
    model.params["fc1.weight"] = weight
    model.params["fc2.bias"] = np.arange(model.params["fc2.bias"].size, dtype=np.float32)
    with ts.no_grad():
        module.fc1.weight.copy_(ts.from_numpy(np.ascontiguousarray(weight)))
        module.fc2.bias.copy_(ts.arange(module.fc2.bias.numel(), dtype=ts.float32))
    assert_same(model.run(x), eager(module, x))
    model.params["fc2.bias"][:] = 3.0
    with ts.no_grad():
        module.fc2.bias.fill_(3.0)
    assert_same(model.run(x), eager(module, x))


def test_assigning_one_of_tied_weights_replaces_both(tmp_path):
    module = nn.Sequential(nn.Linear(4, 4, bias=False), nn.Linear(4, 4, bias=False))
    module[1].weight = module[0].weight
    model = rt.load(saved(tmp_path, module, ts.randn(2, 4)))
    model.params["1.weight"] = np.eye(4, dtype=np.float32)
    assert model.params["0.weight"] is model.params["1.weight"]
    x = data(2, 4)
    np.testing.assert_allclose(model.run(x), x, rtol=1e-6)


@pytest.mark.parametrize("name, value, error, match", [
    ("fc1.weight", np.zeros((2, 2), np.float32), ValueError, r"parameter 'fc1.weight' is float32\[\d+, 4\], got float32\[2, 2\]"),
    ("fc1.weight", None, ValueError, r"is float32\[\d+, 4\], got float64"),
    ("nope", np.zeros(1, np.float32), KeyError, r"no parameter or buffer 'nope' \(it has: fc1.weight"),
])
def test_assigning_a_wrong_param_is_refused_and_changes_nothing(mlp, name, value, error, match):
    model = rt.load(mlp[1])
    x = data(4, 4)
    before = model.run(x)
    if value is None:
        value = np.zeros(model.params[name].shape, np.float64)
    with pytest.raises(error, match=match):
        model.params[name] = value
    with pytest.raises(TypeError, match="cannot be removed"):
        del model.params["fc1.weight"]
    assert_same(model.run(x), before)


def test_programs_are_built_at_load(mlp, monkeypatch):
    built = []
    real = rt_model.Executable
    monkeypatch.setattr(rt_model, "Executable", lambda *a, **k: built.append(1) or real(*a, **k))
    model = rt.load(mlp[1])
    assert built == [1]
    model.run(data(2, 4))
    model.run(data(3, 4))
    assert built == [1]


def test_run_is_thread_safe(mlp):
    module, path = mlp
    model = rt.load(path)
    inputs = [data(i % 5 + 1, 4) for i in range(16)]
    expected = [eager(module, x) for x in inputs]
    failures = []

    def work(k):
        for _ in range(20):
            for i in range(k, len(inputs), 4):
                out = model.run(inputs[i])
                if out.shape != expected[i].shape or not np.allclose(out, expected[i], rtol=1e-5, atol=1e-6):
                    failures.append(i)

    run_in_threads(work)
    assert failures == []


# -- signatures -------------------------------------------------------------------------------------

def signature_of(path) -> str:
    return str(rt.load(path).signature)


def test_batch_is_shared_by_every_input_of_that_size(tmp_path):
    path = saved(tmp_path, TwoHeads(), (ts.randn(3, 4), ts.randn(3, 2)))
    assert signature_of(path) == ("forward(x: float32[batch, 4], y: float32[batch, 2]) -> "
                                  "(float32[batch], Dict[str, float32[batch, 3]])")


def test_a_first_dim_of_another_size_stays_fixed(tmp_path):
    def f(x, w):
        return x @ w
    path = saved(tmp_path, f, (ts.randn(3, 4), ts.randn(4, 2)))
    assert signature_of(path) == "forward(x: float32[batch, 4], w: float32[4, 2]) -> float32[batch, 2]"


@pytest.mark.parametrize("dynamic,expected", [
    ({}, "forward(x: float32[3, 4]) -> float32[3, 3]"),
    ({0: [0]}, "forward(x: float32[batch, 4]) -> float32[batch, 3]"),
    ({0: [-2]}, "forward(x: float32[batch, 4]) -> float32[batch, 3]"),
    ({0: {0: "n"}}, "forward(x: float32[n, 4]) -> float32[n, 3]"),
])
def test_dynamic_names_the_dims_that_vary(tmp_path, dynamic, expected):
    path = saved(tmp_path, MLP(), ts.randn(3, 4), dynamic=dynamic)
    assert signature_of(path) == expected


def test_dims_other_than_the_first_can_vary(tmp_path):
    def f(x):
        return x.sum(1) * 2.0
    path = saved(tmp_path, f, ts.randn(3, 5), dynamic={0: [0, 1]})
    model = rt.load(path)
    assert str(model.signature) == "forward(x: float32[batch, x_1]) -> float32[batch]"
    x = data(2, 9)
    assert_same(model.run(x), eager(f, x))


def test_fixed_batch_is_enforced(tmp_path):
    path = saved(tmp_path, MLP(), ts.randn(3, 4), dynamic={})
    with pytest.raises(InputError, match=r"input 'x' \(position 0\): expected shape \[3, 4\], got \[5, 4\] "
                                         r"\(dim 0 must be 3\)"):
        rt.load(path).run(data(5, 4))


def test_output_dims_that_do_not_follow_a_symbol_are_unknown(tmp_path):
    def f(x):
        return ts.cat([x, x]), x.reshape(-1)
    path = saved(tmp_path, f, ts.randn(3, 2))
    assert signature_of(path) == "forward(x: float32[batch, 2]) -> (float32[*, 2], float32[*])"


@pytest.mark.parametrize("dynamic,error,match", [
    ([0], TypeError, "dynamic must be a dict"),
    ({1: [0]}, ValueError, "dynamic refers to input 1, but the model takes 1 inputs"),
    ({0: [2]}, ValueError, "dynamic dim 2 is out of range for input 'x' of rank 2"),
])
def test_bad_dynamic_arguments(tmp_path, dynamic, error, match):
    with pytest.raises(error, match=match):
        saved(tmp_path, MLP(), ts.randn(3, 4), dynamic=dynamic)


# -- wrong inputs -----------------------------------------------------------------------------------

@pytest.fixture
def two_heads(tmp_path):
    return rt.load(saved(tmp_path, TwoHeads(), (ts.randn(3, 4), ts.randn(3, 2))))


@pytest.mark.parametrize("inputs,match", [
    ((data(3, 4),), r"forward\(\) expects 2 inputs \(x, y\), got 1"),
    ((data(3, 4), data(3, 2), data(3, 2)), r"expects 2 inputs \(x, y\), got 3"),
    ((data(3, 4, dtype=np.float64), data(3, 2)), r"input 'x' \(position 0\): expected dtype float32, got float64"),
    ((data(3, 4), np.zeros((3, 2), np.int64)), r"input 'y' \(position 1\): expected dtype float32, got int64"),
    ((data(3, 4), data(3, 2).astype(np.uint16)), r"input 'y' \(position 1\): expected dtype float32, got "
                                                  r"uint16 \(not a tscript dtype\)"),
    ((data(3, 4), data(3, 2).astype(np.float16)), r"input 'y' \(position 1\): expected dtype float32, got float16"),
    ((data(4), data(3, 2)), r"input 'x' \(position 0\): expected a 2-d array of shape \[batch, 4\], got "
                            r"shape \[4\] \(1-d\)"),
    ((data(3, 5), data(3, 2)), r"input 'x' \(position 0\): expected shape \[batch, 4\], got \[3, 5\] "
                               r"\(dim 1 must be 4\)"),
    ((data(3, 4), data(5, 2)), r"input 'y' \(position 1\): dim 0 \('batch'\) is 5, but input 'x' \(position 0\) "
                               r"has 'batch' = 3"),
    (([[1.0] * 4] * 3, data(3, 2)), r"input 'x' \(position 0\): expected a numpy array float32\[batch, 4\], "
                                    r"got list"),
])
def test_wrong_inputs_are_input_errors(two_heads, inputs, match):
    with pytest.raises(InputError, match=match):
        two_heads.run(*inputs)


def test_input_error_is_a_value_error(two_heads):
    with pytest.raises(ValueError):
        two_heads.run()


def test_non_contiguous_and_foreign_byte_order_inputs_are_accepted(tmp_path):
    module = TwoHeads()
    model = rt.load(saved(tmp_path, module, (ts.randn(3, 4), ts.randn(3, 2))))
    x = data(4, 8)[:, ::2]
    y = data(2, 4).T.astype(">f4")
    assert not x.flags.c_contiguous and not y.dtype.isnative
    assert_same(model.run(x, y), eager(module, np.ascontiguousarray(x), y.astype(np.float32)))


@pytest.fixture
def scalar_model(tmp_path):
    def f(x, alpha: float, n: int, flag: bool):
        return x * 2.0
    return rt.load(saved(tmp_path, f, (ts.randn(2, 2), 1.5, 2, True)))


@pytest.mark.parametrize("args", [(0.5, 3, False), (np.float32(0.5), np.int64(3), np.bool_(True)),
                                  (2, 3, True), (np.array(0.5), np.array(3), np.array(True))])
def test_python_and_numpy_scalars_are_accepted(scalar_model, args):
    x = data(2, 2)
    assert_same(scalar_model.run(x, *args), x * 2.0)


@pytest.mark.parametrize("args,match", [
    (("a", 3, True), r"input 'alpha' \(position 1\): expected float, got str 'a'"),
    ((0.5, 3.5, True), r"input 'n' \(position 2\): expected int, got float 3.5"),
    ((0.5, True, True), r"input 'n' \(position 2\): expected int, got bool True"),
    ((0.5, 3, 1), r"input 'flag' \(position 3\): expected bool, got int 1"),
    ((0.5, np.zeros(2), True), r"input 'n' \(position 2\): expected int, got float64 array of shape \[2\]"),
])
def test_wrong_scalars_are_input_errors(scalar_model, args, match):
    with pytest.raises(InputError, match=match):
        scalar_model.run(data(2, 2), *args)
