"""Broken, tampered or hostile `.tsm` files: both loaders (`tscript_runtime.load` and
`tscript.jit.load`) refuse each with a ModelError naming the file and what is wrong; the format
leaves room for more entry points and native code members."""
import hashlib
import io
import json
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tscript as ts
import tscript_runtime as rt
from tscript import nn
from tscript_runtime import ModelError

from tests.runtime.json_paths import json_paths

LOADERS = [rt.load, ts.jit.load]


@pytest.fixture
def path(tmp_path):
    module = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 3))
    p = tmp_path / "model.tsm"
    ts.jit.save(ts.jit.trace(module, ts.randn(3, 4)), p)
    return p


def contents(path) -> tuple[dict, dict]:
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    return json.loads(members.pop("manifest.json")), members


def rewrite(path, edit=None, members=None, drop=(), rehash=True):
    """Rebuild the file with `edit(manifest)` applied and members replaced or dropped; with
    `rehash` the checksums are recomputed, as a careful attacker would."""
    manifest, old = contents(path)
    old.update(members or {})
    if edit:
        edit(manifest)
    if rehash:
        manifest["members"] = {n: {"sha256": hashlib.sha256(d).hexdigest(), "size": len(d)}
                               for n, d in old.items() if n not in drop}
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("manifest.json", json.dumps(manifest))
        for name, data in old.items():
            if name not in drop:
                zf.writestr(name, data)


def npy(array, allow_pickle=False) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=allow_pickle)
    return buf.getvalue()


def edit_graph(path, change):
    _, members = contents(path)
    graph = json.loads(members["forward.graph.json"])
    change(graph)
    rewrite(path, members={"forward.graph.json": json.dumps(graph).encode()})


def refused(path, match):
    for load in LOADERS:
        with pytest.raises(ModelError, match=match):
            load(path)


# -- the container ----------------------------------------------------------------------------------

def test_missing_file(tmp_path):
    refused(tmp_path / "nope.tsm", "nope.tsm: no such file")


def test_not_a_zip(tmp_path):
    p = tmp_path / "junk.tsm"
    p.write_bytes(b"PK but not really a zip file" * 20)
    refused(p, r"junk.tsm: not a valid archive \(not a zip file, or truncated\)")


@pytest.mark.parametrize("keep", [0.2, 0.7, 0.98])
def test_truncated(path, keep):
    data = path.read_bytes()
    path.write_bytes(data[:int(len(data) * keep)])
    refused(path, "model.tsm: not a valid archive")


def test_tampered_member(path):
    _, members = contents(path)
    weight = np.load(io.BytesIO(members["params/0.weight.npy"]))
    rewrite(path, members={"params/0.weight.npy": npy(weight + 1)}, rehash=False)
    refused(path, "model.tsm: checksum mismatch for member 'params/0.weight.npy'")


def test_missing_member(path):
    rewrite(path, drop={"forward.ir"}, rehash=False)
    refused(path, "model.tsm: member 'forward.ir' listed in the manifest is missing")


@pytest.mark.parametrize("change,match", [
    ({"format": "tscript.save"}, "not a tscript-model archive \\(format 'tscript.save'\\)"),
    ({"version": 3}, "unsupported tscript-model format version 3 \\(this reader supports 1, 2\\)"),
    ({"version": 0}, "unsupported tscript-model format version 0"),
])
def test_unknown_format_or_version(path, change, match):
    rewrite(path, lambda m: m.update(change))
    refused(path, match)


# -- the manifest -----------------------------------------------------------------------------------

def _drop_forward(m):
    m["entry_points"] = {}


def _bad_signature_dtype(m):
    m["entry_points"]["forward"]["inputs"][0]["dtype"] = "float16"


def _bad_signature_shape(m):
    m["entry_points"]["forward"]["inputs"][0]["shape"] = ["batch", -4]


def _signature_without_input(m):
    m["entry_points"]["forward"]["inputs"] = []


def _param_shape(m):
    m["params"]["0.weight"]["shape"] = [4, 8]


def _param_kind(m):
    m["params"]["0.bias"]["kind"] = "tensor"


def _param_member(m):
    m["params"]["0.bias"]["member"] = "params/elsewhere.npy"


def _clashing_names(m):
    m["params"]["0"] = dict(m["params"]["0.bias"])


@pytest.mark.parametrize("edit,match", [
    (lambda m: m.pop("entry_points"), "the manifest: field 'entry_points' is missing or not a dict"),
    (lambda m: m.update(params=[]), "the manifest: field 'params' is missing or not a dict"),
    (_drop_forward, "the manifest has no 'forward' entry point"),
    (lambda m: m["entry_points"]["forward"].pop("graph"), "entry point 'forward': field 'graph' is missing"),
    (_bad_signature_dtype, "unknown dtype 'float16' in the signature"),
    (_bad_signature_shape, r"malformed shape \['batch', -4\] in the signature"),
    (_signature_without_input, "the graph takes 2 inputs and returns 1 values, but the signature describes 1 and 1 "
                                "\\(counting the module input\\)"),
    (_param_shape, r"parameter '0.weight': member 'params/0.weight.npy' has shape \[8, 4\], the manifest says "
                   r"\[4, 8\]"),
    (_param_kind, "parameter '0.bias': kind must be one of parameter, buffer"),
    (_param_member, "member 'params/elsewhere.npy' is not listed in the manifest"),
    (_clashing_names, "'0' is stored both as a parameter and as a module"),
])
def test_malformed_manifest(path, edit, match):
    rewrite(path, edit)
    refused(path, "model.tsm: .*" + match)


def test_manifest_that_is_not_json(path):
    _, members = contents(path)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("manifest.json", b"{\"format\": ")
        for name, data in members.items():
            zf.writestr(name, data)
    refused(path, "manifest.json is not valid JSON")


def test_unknown_object_kind_is_refused_by_tscript(path):
    rewrite(path, lambda m: m.update(kind="widget"))
    with pytest.raises(ModelError, match="unknown object kind 'widget'"):
        ts.jit.load(path)


def test_module_without_its_module_listing_is_refused_by_tscript(path):
    rewrite(path, lambda m: m.pop("modules"))
    with pytest.raises(ModelError, match="malformed 'modules' listing"):
        ts.jit.load(path)


# -- the graph --------------------------------------------------------------------------------------

def test_graph_that_is_not_json(path):
    rewrite(path, members={"forward.graph.json": b"[1, 2"})
    refused(path, "member 'forward.graph.json' is not valid JSON")


def test_graph_with_a_broken_structure(path):
    edit_graph(path, lambda g: g.pop("outputs"))
    refused(path, "member 'forward.graph.json': graph field 'outputs' must be a list")


def test_graph_using_an_undefined_value(path):
    edit_graph(path, lambda g: g["nodes"][3]["inputs"].__setitem__(0, "ghost"))
    refused(path, "member 'forward.graph.json': aten::linear uses %ghost before it is defined")


def test_graph_using_an_unknown_op(path):
    edit_graph(path, lambda g: g["nodes"][3].update(kind="aten::frobnicate"))
    refused(path, "the graph uses unknown op 'aten::frobnicate'")


def test_graph_reading_an_attribute_that_is_not_stored(path):
    def drop_bias(m):
        del m["params"]["1.bias"]
    rewrite(path, drop_bias, drop={"params/1.bias.npy"})
    refused(path, "the graph reads attribute '1.bias', which the file does not store")


def test_graph_with_a_malformed_type_is_refused_by_tscript(path):
    edit_graph(path, lambda g: g["inputs"][1].update(type="Flaot(3, 4)"))
    with pytest.raises(ModelError, match="member 'forward.graph.json': cannot rebuild the graph"):
        ts.jit.load(path)


def test_graph_referring_to_a_missing_constant(path):
    edit_graph(path, lambda g: g["nodes"].insert(0, {"kind": "prim::Constant", "inputs": [],
                                                     "outputs": [{"name": "k", "type": "Tensor"}],
                                                     "attrs": {"value": {"tensor": "c9"}}}))
    with pytest.raises(ModelError, match="model.tsm: entry point 'forward': .*tensor constant 'c9'"):
        rt.load(path)


# -- parameter arrays -------------------------------------------------------------------------------

def test_params_with_another_dtype(path):
    rewrite(path, members={"params/0.bias.npy": npy(np.zeros(8, np.float64))})
    refused(path, "parameter '0.bias': member 'params/0.bias.npy' holds float64 data, the manifest says 'float32'")


def test_params_of_a_dtype_tscript_lacks(path):
    rewrite(path, members={"params/0.bias.npy": npy(np.zeros(8, np.float16))})
    refused(path, "member 'params/0.bias.npy'.*unsupported array dtype float16")


def test_pickled_object_array(path):
    rewrite(path, members={"params/0.bias.npy": npy(np.array([{"x": 1}] * 8, dtype=object), allow_pickle=True)})
    refused(path, "member 'params/0.bias.npy'.*refusing to load pickled data")


def test_params_that_are_not_npy(path):
    rewrite(path, members={"params/0.bias.npy": b"\x93NUMPY garbage"})
    refused(path, "member 'params/0.bias.npy'.*not a valid .npy array")


# -- room to grow -----------------------------------------------------------------------------------

def test_more_entry_points_need_no_format_change(path):
    def add_method(m):
        m["entry_points"]["twice"] = dict(m["entry_points"]["forward"])
    rewrite(path, add_method)
    model = rt.load(path)
    x = np.ones((2, 4), np.float32)
    assert list(model.entry_points) == ["forward", "twice"]
    np.testing.assert_array_equal(model.run_method("twice", x), model.run(x))


def test_the_plan_member_is_checked(path):
    rewrite(path, lambda m: m["entry_points"]["forward"].update(plan="forward.plan.json"))
    refused(path, "member 'forward.plan.json' is not listed in the manifest")
    rewrite(path, lambda m: m["entry_points"]["forward"].update(plan="forward.plan.json"),
            members={"forward.plan.json": b"; ModuleID = 'forward'\n"})
    refused(path, "member 'forward.plan.json' is not valid JSON")
    rewrite(path, lambda m: m["entry_points"]["forward"].update(plan="forward.plan.json"),
            members={"forward.plan.json": b'{"format": "tscript-native-plan"}'})
    refused(path, "not a native plan")


# -- any field of any type --------------------------------------------------------------------------

ODD_VALUES = [None, 0, -1, 1.5, "", "x", [], {}, [1], [[1]], {"a": 1}, True, "float32", {"type": "tensor"}]


def _set(doc, path, value):
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """The bytes, manifest and graph of a saved model with tuple and dict outputs and a constant."""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            h = self.fc(x)
            return h.sum(1) + ts.tensor([1.0]), {"h": h}

    p = tmp_path_factory.mktemp("pristine") / "model.tsm"
    ts.jit.save(ts.jit.trace(Net(), ts.randn(3, 4)), p)
    manifest, members = contents(p)
    return p, p.read_bytes(), manifest, json.loads(members["forward.graph.json"])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_field_of_any_type_is_a_model_error_or_loads(pristine, data):
    path, original, manifest, graph = pristine
    in_graph = data.draw(st.booleans(), label="edit the graph (else the manifest)")
    doc = json.loads(json.dumps(graph if in_graph else manifest))
    where = data.draw(st.sampled_from([q for q in json_paths(doc) if q[0] != "members"]), label="field")
    _set(doc, where, data.draw(st.sampled_from(ODD_VALUES), label="value"))
    path.write_bytes(original)
    if in_graph:
        rewrite(path, members={"forward.graph.json": json.dumps(doc).encode()})
    else:
        rewrite(path, lambda m: (m.clear(), m.update(doc)))
    for load in LOADERS:
        try:
            load(path)
        except ModelError:
            pass
