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
from tscript_runtime.errors import OpError

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


@pytest.fixture
def big_path(tmp_path):
    """A model whose weight (256 KiB) is hashed on a thread while the runtime prepares the model."""
    p = tmp_path / "model.tsm"
    ts.jit.save(ts.jit.compile(nn.Linear(256, 256), ts.randn(2, 256)), p)
    return p


@pytest.mark.parametrize("broken_graph", [False, True])
def test_tampered_large_member(big_path, broken_graph):
    """A deferred checksum still refuses the file, also when something else fails first (the
    corrupt member is what went wrong)."""
    manifest, members = contents(big_path)
    weight = np.load(io.BytesIO(members["params/weight.npy"]))
    weight[100, 7] += 1
    changed = {"params/weight.npy": npy(weight)}
    graph = b"{not json"

    def honest_graph_checksum(m):
        m["members"]["forward.graph.json"] = {"sha256": hashlib.sha256(graph).hexdigest(), "size": len(graph)}
    if broken_graph:
        changed["forward.graph.json"] = graph
    rewrite(big_path, honest_graph_checksum if broken_graph else None, members=changed, rehash=False)
    refused(big_path, "model.tsm: checksum mismatch for member 'params/weight.npy'")


def test_large_member_intact_loads(big_path):
    x = np.random.default_rng(0).standard_normal((2, 256)).astype(np.float32)
    manifest, members = contents(big_path)
    w, b = (np.load(io.BytesIO(members[f"params/{n}.npy"])) for n in ("weight", "bias"))
    np.testing.assert_allclose(rt.load(big_path).run(x), x @ w.T + b, rtol=1e-5, atol=1e-5)


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
    m["entry_points"]["forward"]["inputs"][0]["dtype"] = "uint16"


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
    (_bad_signature_dtype, "unknown dtype 'uint16' in the signature"),
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


# -- what each kind of node needs: refused at load, never a KeyError or IndexError in a run ----------

def looping(x, n: int):
    for _ in range(n):
        x = x * 2
    if bool(x.sum() > 0):
        x = x + 1
    else:
        x = x - 1
    return x


@pytest.fixture
def scripted(tmp_path):
    p = tmp_path / "scripted.tsm"
    ts.jit.save(ts.jit.script(looping), p)
    return p


def node(graph, kind, i=0) -> dict:
    return [n for n in graph["nodes"] if n["kind"] == kind][i]


def del_items(items: list, keep: int) -> None:
    del items[keep:]


@pytest.mark.parametrize("edit,match", [
    (lambda g: node(g, "prim::Loop").pop("blocks"), "prim::Loop needs 1 block, got 0"),
    (lambda g: node(g, "prim::Loop").update(blocks=[]), "prim::Loop needs 1 block, got 0"),
    (lambda g: node(g, "prim::Loop")["inputs"].pop(), "prim::Loop takes 0 outputs, got 1"),
    (lambda g: del_items(node(g, "prim::Loop")["inputs"], 1), "prim::Loop takes at least 2 inputs, got 1"),
    (lambda g: node(g, "prim::Loop")["blocks"][0]["params"].append({"name": "extra", "type": "int"}),
     "prim::Loop: block 0 takes 3 parameters and returns 2 values, expected 2 and 2"),
    (lambda g: node(g, "prim::If").update(inputs=[]), "prim::If takes 1 input, got 0"),
    (lambda g: node(g, "prim::If")["blocks"].pop(), "prim::If needs 2 blocks, got 1"),
    (lambda g: node(g, "prim::If")["blocks"][1]["returns"].clear(),
     "prim::If: block 1 takes 0 parameters and returns 0 values, expected 0 and 1"),
    (lambda g: node(g, "aten::gt")["inputs"].pop(), r"aten::gt takes 2 inputs \(aten::gt\(.*\) -> Tensor\), got 1"),
    (lambda g: node(g, "aten::gt")["inputs"].extend(["x"] * 3), "aten::gt takes 2 inputs .*, got 5"),
    (lambda g: node(g, "aten::gt")["outputs"].append({"name": "more", "type": "Tensor"}),
     "aten::gt takes 1 output .*, got 2"),
    (lambda g: node(g, "aten::gt").update(blocks=[{"params": [], "nodes": [], "returns": []}]),
     "aten::gt has blocks \\(only prim::If and prim::Loop have them\\)"),
])
def test_a_node_without_what_its_kind_needs_is_refused_at_load(scripted, edit, match):
    edit_graph(scripted, edit)
    refused(scripted, "scripted.tsm: member 'forward.graph.json': " + match)


@pytest.mark.parametrize("edit,match", [
    (lambda g: node(g, "prim::GetAttr")["attrs"].pop("name"), "prim::GetAttr needs a str attribute 'name'"),
    (lambda g: node(g, "prim::GetAttr")["attrs"].update(name=["weight"]), "prim::GetAttr needs a str attribute 'name'"),
    (lambda g: node(g, "prim::GetAttr")["inputs"].clear(), "prim::GetAttr takes 1 input, got 0"),
    (lambda g: del_items(node(g, "aten::linear")["inputs"], 1),
     r"aten::linear takes 2 to 3 inputs \(aten::linear\(Tensor input, Tensor weight, Tensor\? bias=None\)"),
    (lambda g: g["nodes"].insert(0, {"kind": "prim::DictConstruct", "inputs": ["input"],
                                     "outputs": [{"name": "d", "type": "Any"}]}),
     "prim::DictConstruct takes keys and values \\(an even number of inputs\\), got 1"),
    (lambda g: g["nodes"].insert(0, {"kind": "prim::Constant", "inputs": [], "outputs": []}),
     "prim::Constant takes 1 output, got 0"),
])
def test_a_prim_or_op_without_what_it_needs_is_refused_at_load(path, edit, match):
    edit_graph(path, edit)
    refused(path, "model.tsm: member 'forward.graph.json': " + match)


def test_a_python_call_is_refused_at_load(path, scripted):
    """tscript.jit.save refuses graphs that call Python (@tscript.jit.ignore): a file holding one is
    refused by both loaders, not loaded to fail with a KeyError when called."""
    def call_python(g):
        linear = node(g, "aten::linear")
        g["nodes"].append({"kind": "prim::PythonOp", "inputs": [linear["outputs"][0]["name"]],
                           "outputs": [{"name": "shell", "type": "int"}], "attrs": {"name": "os.system"}})
    edit_graph(path, call_python)
    refused(path, "model.tsm: member 'forward.graph.json': the graph calls the Python function 'os.system', which a "
                  "saved model cannot do")

    def in_a_branch(g):
        node(g, "prim::If")["blocks"][0]["nodes"].append(
            {"kind": "prim::PythonOp", "inputs": [], "outputs": [], "attrs": {"name": "os.system"}})
    edit_graph(scripted, in_a_branch)
    refused(scripted, "the graph calls the Python function 'os.system'")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """A compiled model saved with its native plan (a row kernel between two GEMMs), its input and output."""
    ts.manual_seed(0)
    module = nn.Sequential(nn.Linear(16, 32), nn.LayerNorm(32), nn.Linear(32, 10)).eval()
    p = tmp_path_factory.mktemp("compiled") / "compiled.tsm"
    ts.jit.save(ts.jit.compile(module, ts.randn(4, 16)), p)
    x = np.random.default_rng(0).standard_normal((4, 16)).astype(np.float32)
    return p, x, module(ts.tensor(x)).detach().numpy()


@pytest.fixture
def compiled_path(compiled, tmp_path):
    p = tmp_path / "compiled.tsm"
    p.write_bytes(compiled[0].read_bytes())
    return p


def group(g) -> dict:
    return next(n for n in g["nodes"] if n["kind"] in ("tscript::FusionGroup", "tscript::RowGroup"))


@pytest.mark.parametrize("edit,match", [
    (lambda g: group(g)["attrs"].pop("subgraph"), "tscript::RowGroup needs a 'subgraph' attribute \\(a graph\\)"),
    (lambda g: group(g)["attrs"].update(subgraph={"tuple": []}), "tscript::RowGroup needs a 'subgraph' attribute"),
    (lambda g: group(g)["inputs"].pop(),
     "tscript::RowGroup: its subgraph takes 3 inputs and returns 1 values, the node has 2 inputs and 1 outputs"),
    (lambda g: del_items(node(g, "aten::linear")["inputs"], 1), "aten::linear takes 2 to 3 inputs"),
])
def test_a_group_or_gemm_without_what_it_needs_is_refused_at_load(compiled_path, edit, match):
    edit_graph(compiled_path, edit)
    refused(compiled_path, "compiled.tsm: member 'forward.graph.json': " + match)


def test_a_plan_that_does_not_fit_its_graph_is_refused_naming_the_file(compiled_path):
    edit_graph(compiled_path, lambda g: g["nodes"].insert(0, {"kind": "prim::Constant", "inputs": [],
                                                              "outputs": [{"name": "k", "type": "int"}],
                                                              "attrs": {"value": 1}}))  # moves the plan's nodes
    refused(compiled_path, "compiled.tsm: entry point 'forward': .*native plan")


def test_a_linear_without_its_optional_bias_runs_natively(compiled, compiled_path):
    """An input the schema makes optional may be left out (the plan's GEMM then adds no bias)."""
    _, x, expected = compiled
    edit_graph(compiled_path, lambda g: node(g, "aten::linear", 1)["inputs"].pop())
    model = rt.load(compiled_path)
    assert model.executables["forward"].prepare([model._tree, x])  # the whole-graph entry runs it
    np.testing.assert_allclose(model.run(x) + model.params["2.bias"], expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ts.jit.load(compiled_path)(ts.tensor(x)).numpy(), model.run(x), rtol=1e-6)


@pytest.mark.parametrize("value", [{"tuple": [1, 2]}, {"dtype": "float64"}, {"float": "nan"}, None])
def test_constants_that_are_not_tensors_are_not_planned_as_tensors(compiled, compiled_path, value):
    _, x, expected = compiled
    edit_graph(compiled_path, lambda g: g["nodes"].append(
        {"kind": "prim::Constant", "inputs": [], "outputs": [{"name": "unused", "type": "Any"}],
         "attrs": {"value": value}}))
    model = rt.load(compiled_path)
    assert model.executables["forward"].entry is not None
    np.testing.assert_allclose(model.run(x), expected, rtol=1e-5, atol=1e-5)


@st.composite
def list_edits(draw, doc: dict):
    """A list anywhere in the document with an element removed, duplicated or the list emptied."""
    lists = [q for q in json_paths(doc) if isinstance(_get(doc, q), list) and _get(doc, q)]
    where = draw(st.sampled_from(lists), label="list")
    return where, draw(st.sampled_from(["drop first", "drop last", "duplicate", "empty"]), label="edit")


def _get(doc, path):
    for key in path:
        doc = doc[key]
    return doc


def _edit_list(items: list, action: str) -> None:
    if action == "drop first":
        del items[0]
    elif action == "drop last":
        items.pop()
    elif action == "duplicate":
        items.append(json.loads(json.dumps(items[-1])))
    else:
        items.clear()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_list_of_a_graph_cut_or_grown_is_a_model_error_or_runs(scripted, data):
    """Structural damage anywhere in a graph with control flow: a ModelError at load, or a model that
    runs or raises a clean error (an OpError naming the node), never a KeyError or IndexError."""
    _, members = contents(scripted)
    graph = json.loads(members["forward.graph.json"])
    where, action = data.draw(list_edits(graph))
    _edit_list(_get(graph, where), action)
    p = scripted.with_name(f"cut-{len(where)}.tsm")
    p.write_bytes(scripted.read_bytes())
    rewrite(p, members={"forward.graph.json": json.dumps(graph).encode()})
    for load, args in [(rt.load, (np.ones(3, np.float32), 2)), (ts.jit.load, (ts.ones(3), 2))]:
        try:
            model = load(p)
        except ModelError:
            continue
        try:
            model.run(*args) if load is rt.load else model(*args)
        except OpError:
            pass


# -- parameter arrays -------------------------------------------------------------------------------

def test_params_with_another_dtype(path):
    rewrite(path, members={"params/0.bias.npy": npy(np.zeros(8, np.float64))})
    refused(path, "parameter '0.bias': member 'params/0.bias.npy' holds float64 data, the manifest says 'float32'")


def test_params_of_a_dtype_tscript_lacks(path):
    rewrite(path, members={"params/0.bias.npy": npy(np.zeros(8, np.uint16))})
    refused(path, "member 'params/0.bias.npy'.*unsupported array dtype uint16")


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
