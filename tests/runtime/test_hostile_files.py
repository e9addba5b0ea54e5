"""A `.tsm` file is data: nothing in it is ever compiled, linked or run. Each attack that ran code from
version-1 files (stored LLVM IR with inline asm, a call through pointer arithmetic from an allowed
symbol, a `declare` behind a leading space, foreign object code, malformed object bytes) is built
here for real: first shown to run when linked (a marker file appears), then put in a saved model,
which loads and runs its honest graph without the marker ever appearing. Native plans cannot be
made to misbehave either: mutated plans are refused or give the right result, never a crash."""
import ctypes
import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tscript as ts
import tscript_runtime as rt
from tscript import nn
from tscript_runtime import ModelError
from tscript_runtime.archive import read_archive, write_archive
from tscript_runtime.model import FORMAT, READABLE_VERSIONS
from tscript_runtime.native import target
from tscript_runtime.native.emit import emit_module
from tscript_runtime.native.link import NativeLibrary, declared_functions

from tests.conftest import assert_close
from tests.runtime.json_paths import json_paths

KERNEL_ARGS = "i64* %sizes, i8** %ptrs, i64* %strides, double* %scalars"


def _string(name: str, text: str) -> str:
    data = text.encode() + b"\0"
    escaped = "".join("\\%02X" % b for b in data)
    return f'@{name} = private constant [{len(data)} x i8] c"{escaped}"'


def _ptr(name: str, text: str) -> str:
    n = len(text.encode()) + 1
    return f"i8* getelementptr ([{n} x i8], [{n} x i8]* @{name}, i64 0, i64 0)"


def system_call(marker: Path, space: str = "") -> str:
    """A kernel calling libc's system() to create `marker`; `space` goes before `declare`."""
    cmd = f"touch {marker}"
    return (f"{_string('cmd', cmd)}\n{space}declare i32 @system(i8*)\n"
            f"define void @k0({KERNEL_ARGS}) {{\n  %r = call i32 @system({_ptr('cmd', cmd)})\n  ret void\n}}\n")


def inline_asm(marker: Path) -> str:
    """A kernel creating `marker` with the creat system call in inline assembly: no symbol at all."""
    path = str(marker)
    return (f"{_string('path', path)}\n"
            f"define void @k0({KERNEL_ARGS}) {{\n"
            f'  %r = call i64 asm sideeffect "syscall", "={{rax}},{{rax}},{{rdi}},{{rsi}},~{{rcx}},~{{r11}},~{{memory}}"'
            f"(i64 85, {_ptr('path', path)}, i64 420)\n  ret void\n}}\n")


def pointer_arithmetic(marker: Path) -> str:
    """A kernel reaching system() from malloc, an allowed symbol, by its distance in this libc."""
    libc = ctypes.CDLL(None)
    offset = ctypes.cast(libc.system, ctypes.c_void_p).value - ctypes.cast(libc.malloc, ctypes.c_void_p).value
    cmd = f"touch {marker}"
    return (f"{_string('cmd', cmd)}\ndeclare i8* @malloc(i64)\n"
            f"define void @k0({KERNEL_ARGS}) {{\n"
            f"  %m = ptrtoint i8* (i64)* @malloc to i64\n  %a = add i64 %m, {offset}\n"
            f"  %f = inttoptr i64 %a to i32 (i8*)*\n  %r = call i32 %f({_ptr('cmd', cmd)})\n  ret void\n}}\n")


ATTACKS = {"inline asm": inline_asm, "pointer arithmetic from an allowed symbol": pointer_arithmetic,
           "whitespace before declare": lambda marker: system_call(marker, " "),
           "a plain call to system()": system_call}


def elementwise(x, y):
    return ts.tanh(x * y + 1.0) * ts.sigmoid(x) - ts.exp(-x * x)


def mlp():
    ts.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 10), nn.Softmax(-1)).eval()


def rows(seed: int, *shape) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.fixture(scope="module")
def honest(tmp_path_factory):
    """Saved compiled models and their eager results: fn.tsm (a pointwise kernel, no GEMM) and
    mlp.tsm (row kernels and GEMMs in a whole-graph entry)."""
    tmp = tmp_path_factory.mktemp("honest")
    x, y = rows(0, 8, 64), rows(1, 64)
    ts.jit.save(ts.jit.compile(elementwise, (ts.tensor(x), ts.tensor(y))), tmp / "fn.tsm")
    module = mlp()
    ts.jit.save(ts.jit.compile(module, ts.randn(4, 16), dynamic={0: [0]}), tmp / "mlp.tsm")
    with ts.no_grad():
        expected = {"fn": ((x, y), elementwise(ts.tensor(x), ts.tensor(y)).numpy()),
                    "mlp": ((rows(2, 5, 16),), module(ts.tensor(rows(2, 5, 16))).numpy())}
    return tmp, expected


def rewrite(src: Path, dst: Path, edit=None, members=None, version=None) -> Path:
    """A copy of the saved model `src` with `edit(manifest)` applied, `members` added or replaced and
    the format version set, its checksums recomputed: a valid archive, as an attacker writes it."""
    archive = read_archive(src, FORMAT, READABLE_VERSIONS)
    manifest = {k: v for k, v in archive.manifest.items() if k not in ("format", "version", "members")}
    if edit:
        edit(manifest)
    write_archive(dst, FORMAT, version or archive.manifest["version"], manifest, {**archive.members, **(members or {})})
    return dst


def with_native_code(src: Path, dst: Path, ll: str, obj: bytes, version: int) -> Path:
    """The saved model with LLVM IR and object code stored the way version 1 stored them (the
    manifest naming them for this very host), as version 1 or 2."""
    host = target.host()

    def edit(manifest):
        manifest["entry_points"]["forward"]["native"] = {
            "target_triple": host["triple"], "cpu": host["cpu"], "cpu_features": host["features"],
            "llvm_ir": "forward.ll", "object": "forward.o", "entry": None,
            "kernels": [{"name": "k0", "rank": 2, "inputs": ["tensor", "tensor"], "input_dtypes": ["float32"] * 2,
                         "output_dtypes": ["float32"], "out_row": False, "row": False}]}
        if version == 1:
            manifest["entry_points"]["forward"].pop("plan")
    return rewrite(src, dst, edit, {"forward.ll": ll.encode(), "forward.o": obj}, version)


def run_linked(ll: str) -> None:
    """Compile `ll` for this host, link it as the runtime used to, and call its kernel k0."""
    obj = target.optimize_and_emit(ll)
    library = NativeLibrary(obj, ["k0"], set(re.findall(r"declare [^@]*@(\w+)", ll)))
    ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 4)(library.address("k0"))(None, None, None, None)


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_the_crafted_code_runs_when_linked(attack, tmp_path):
    """Not a straw man: linked and called, each crafted kernel creates its marker file."""
    marker = tmp_path / "marker"
    run_linked(ATTACKS[attack](marker))
    assert marker.exists()


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("attack", list(ATTACKS))
def test_stored_ir_and_object_code_never_run(honest, attack, version, tmp_path):
    tmp, expected = honest
    marker = tmp_path / "marker"
    ll = ATTACKS[attack](marker)
    path = with_native_code(tmp / "fn.tsm", tmp_path / "evil.tsm", ll, target.optimize_and_emit(ll), version)
    for load in (rt.load, ts.jit.load):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # version 1: "runs on the reference kernels"
            model = load(path)
        args, want = expected["fn"]
        got = model.run(*args) if load is rt.load else model(*map(ts.tensor, args)).numpy()
        assert_close(got, want)
    assert not marker.exists()


def test_version_1_files_say_their_code_is_not_run(honest, tmp_path):
    tmp, expected = honest
    ll = system_call(tmp_path / "marker")
    path = with_native_code(tmp / "fn.tsm", tmp_path / "old.tsm", ll, target.optimize_and_emit(ll), 1)
    with pytest.warns(RuntimeWarning, match=r"old.tsm: entry point 'forward': saved by an older tscript \(format "
                                            r"version 1\) with native code this runtime never runs; it runs on the "
                                            r"reference kernels. Save the model again"):
        model = rt.load(path)
    assert model.executables["forward"].mode == "interpreted"
    assert_close(model.run(*expected["fn"][0]), expected["fn"][1])


LOAD_AND_RUN = """
import sys, warnings
import numpy as np, tscript_runtime
warnings.simplefilter("ignore")
model = tscript_runtime.load(sys.argv[1])
print(model.run(np.ones((8, 64), np.float32), np.ones(64, np.float32)).sum())
"""


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("obj", [b"\x7fELF\x02\x01\x01" + b"\xff" * 57, b"\x7fELF\x02\x01" + bytes(10), b"MZ\x90\x00"])
def test_malformed_object_bytes_are_never_read(honest, obj, version, tmp_path):
    """Object bytes that made LLVM abort the process: a fresh process loads and runs the file."""
    path = with_native_code(honest[0] / "fn.tsm", tmp_path / "bad.tsm", "; nothing\n", obj, version)
    done = subprocess.run([sys.executable, "-c", LOAD_AND_RUN, str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    want = elementwise(ts.ones(8, 64), ts.ones(64)).numpy().sum()
    assert abs(float(done.stdout) - want) < 1e-3 * abs(want)


def test_names_from_the_file_never_reach_the_emitted_code(honest, tmp_path):
    """A kernel name written to inject IR is only a key: the emitter names functions itself."""
    tmp, expected = honest
    evil = 'k0"() {\n}\ndeclare i32 @system(i8*)\ndefine void @"x'

    def rename(doc):
        text = json.dumps(doc).replace('"k0"', json.dumps(evil))
        return json.loads(text)
    archive = read_archive(tmp / "fn.tsm", FORMAT, READABLE_VERSIONS)
    members = {m: json.dumps(rename(json.loads(bytes(archive.members[m])))).encode()
               for m in ("forward.graph.json", "forward.plan.json")}
    path = rewrite(tmp / "fn.tsm", tmp_path / "names.tsm", members=members)
    model = rt.load(path)
    assert list(model.executables["forward"].launchers) == [evil]
    assert "system" not in declared_functions(emit_module(model.executables["forward"].plan))
    assert_close(model.run(*expected["fn"][0]), expected["fn"][1])


@pytest.mark.parametrize("plan", [b"define void @k0() { ret void }", b"\x7fELF\x02\x01" + bytes(40), b"[]", b"null"])
def test_a_plan_that_is_not_a_plan_is_refused(honest, plan, tmp_path):
    path = rewrite(honest[0] / "fn.tsm", tmp_path / "bad.tsm", members={"forward.plan.json": plan})
    if plan == b"null":  # no plan: the executor runs the graph
        assert rt.load(path).executables["forward"].mode == "interpreted"
        return
    with pytest.raises(ModelError, match="bad.tsm: .*(not valid JSON|not a native plan)"):
        rt.load(path)


# -- mutated plans ------------------------------------------------------------------------------------

NUMBERS = [-(1 << 63), -1, 0, 1, 2, 3, 4, 5, 8, 16, 17, 64, 65, 1 << 16, 1 << 40, 1 << 62, 1 << 63, 10 ** 30]
ODD = [None, 1.5, float("nan"), "", "k0", "gemm", "kernel", "row", "pointwise", [], {}, [1], True, {"node": 1}]


@st.composite
def mutations(draw, plan: dict):
    """(path, action, value): set a field to another number or value, delete it, or duplicate,
    drop or swap list items."""
    path = draw(st.sampled_from(list(json_paths(plan))))
    action = draw(st.sampled_from(["set", "set", "set", "delete", "duplicate", "swap"]))
    value = draw(st.sampled_from(NUMBERS + ODD))
    return path, action, value


def _mutate(plan: dict, path: tuple, action: str, value):
    parent = plan
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    if action == "set":
        parent[key] = value
    elif action == "delete":
        del parent[key]
    elif action == "duplicate" and isinstance(parent, list):
        parent.insert(key, json.loads(json.dumps(parent[key])))
    elif action == "swap" and isinstance(parent, list) and len(parent) > 1:
        other = (key + 1) % len(parent)
        parent[key], parent[other] = parent[other], parent[key]
    else:
        parent[key] = value


@pytest.mark.parametrize("name", ["fn", "mlp"])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_mutated_plan_is_refused_or_gives_the_right_result(honest, name, tmp_path, data):
    tmp, expected = honest
    plan = json.loads(bytes(read_archive(tmp / f"{name}.tsm", FORMAT, READABLE_VERSIONS).members["forward.plan.json"]))
    path, action, value = data.draw(mutations(plan), label="mutation")
    _mutate(plan, path, action, value)
    mutated = rewrite(tmp / f"{name}.tsm", tmp_path / "mutated.tsm",
                      members={"forward.plan.json": json.dumps(plan).encode()})
    try:
        model = rt.load(mutated)
    except ModelError:
        return
    args, want = expected[name]
    assert_close(model.run(*args), want, rtol=1e-5, atol=1e-6)


@st.composite
def schedules(draw, plan: dict):
    """The plan with every schedule field redrawn within its allowed values."""
    plan = json.loads(json.dumps(plan))
    for entry in [*plan["kernels"].values(), *(plan["entry"] or [])]:
        for field, allowed in {"tile": [0, 4, 8, 16], "split_min": [0, 1, 64, 1 << 16, 1 << 62],
                               "small_m": [0, 1, 2, 3, 17, 64]}.items():
            if field in entry:
                entry[field] = draw(st.sampled_from(allowed), label=field)
    return plan


@pytest.mark.parametrize("name", ["fn", "mlp"])
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_schedule_a_plan_may_choose_gives_the_right_result(honest, name, tmp_path, data):
    """Splitting everything over two threads (split_min 0), BLAS for every GEMM (small_m 0), any tile
    side: the emitted code changes, the result does not."""
    tmp, expected = honest
    plan = json.loads(bytes(read_archive(tmp / f"{name}.tsm", FORMAT, READABLE_VERSIONS).members["forward.plan.json"]))
    plan = data.draw(schedules(plan), label="plan")
    path = rewrite(tmp / f"{name}.tsm", tmp_path / "scheduled.tsm", members={"forward.plan.json": json.dumps(plan).encode()})
    args, want = expected[name]
    assert_close(rt.load(path).run(*args), want, rtol=1e-5, atol=1e-6)
