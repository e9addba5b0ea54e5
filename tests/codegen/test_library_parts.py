"""The kernel library in parts (native/library/parts.py): a process links only the parts whose functions
it asks for (and the parts their code calls), each part's object names only the library functions of
other parts as imports, and a part missing from the cache is compiled by a child process into it."""
import os
import subprocess
import sys

import pytest

from tscript_runtime.native import child_builds, library
from tscript_runtime.native.library import parts

LINKED = """
import json, sys
import tscript_runtime.native.library as library
library.addresses(sys.argv[1].split(","))
print(json.dumps(sorted(library._state["parts"])))
"""


def linked_parts(names: list[str], env: dict) -> list[str]:
    done = subprocess.run([sys.executable, "-c", LINKED, ",".join(names)], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    return __import__("json").loads(done.stdout)


def test_every_function_has_one_part():
    for name in library.FUNCTIONS:
        assert name in parts.names_of(parts.part_of(name))
    assert parts.part_of("tscript_im2col_part_f32") == parts.part_of("tscript_im2col_f32") == "conv_f32"
    assert parts.part_of("tscript_sgemm_f32") == parts.part_of("tscript_sgemm_epilogue_f32") == "packed_gemm"


def test_a_parts_imports_are_other_parts_functions():
    """The packed GEMM calls the two-thread pool of the `parallel` part and its own row blocks (micro-
    kernels) of the `packed_rows` part: imports, not copies."""
    obj, imports = parts.object_of("packed_gemm")
    assert {"tscript_parallel2", "tscript_sgemm_f32_rows6", "tscript_sgemm_f32_rows1"} <= imports
    assert not imports & set(parts.names_of("packed_gemm"))
    _, pool_imports = parts.object_of("parallel")
    assert not pool_imports & library.NAMES


def test_needs_lists_the_parts_each_part_calls():
    """prefetch starts a model's parts and the parts they call (NEEDS) at once: the table must be whole."""
    from tscript_runtime.native.library.packed_rows import ARGUMENTS, ROW_NAMES
    assert all(library.FUNCTIONS[name][2] == ARGUMENTS for name in ROW_NAMES)
    for part in sorted({parts.part_of(n) for n in library.FUNCTIONS}):
        _, imports = parts.object_of(part)
        called = {parts.part_of(n) for n in imports & library.NAMES}
        assert called <= set(parts.NEEDS.get(part, ())), (part, called)
    assert parts.with_needs(["packed_gemm", "gemm"]) == {"packed_gemm", "packed_rows6", "packed_rows", "parallel", "gemm"}


def test_a_process_links_only_what_it_needs(tmp_path):
    """Asking for the packed GEMM links it, its row blocks and the pool it calls, nothing else; a child
    process compiled some of them into the cache meanwhile."""
    env = {**os.environ, "TSCRIPT_CACHE_DIR": str(tmp_path)}
    assert linked_parts(["tscript_sgemm_f32"], env) == ["packed_gemm", "packed_rows", "packed_rows6", "parallel"]
    assert linked_parts(["tscript_max_pool2d_f64", "tscript_erf_f32"], env) == ["conv_f64", "unary_f32"]
    objects = sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".o")
    assert len(objects) == 6


def quiet_children():
    """Wait for every child other tests started (prefetch starts none while one runs)."""
    for key in list(child_builds._building):
        child_builds.wait_for(key)


def test_prefetch_builds_in_a_child(tmp_path, monkeypatch):
    monkeypatch.setenv("TSCRIPT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TSCRIPT_BUILD_PROCESSES", "1")
    from tscript_runtime.native.cache import lookup
    quiet_children()
    parts.prefetch(["unary_f32"], here=5.0)  # the caller busy for 5 s: the child takes it
    assert child_builds.wait_for(parts.key("unary_f32"))
    assert lookup(parts.key("unary_f32")) is not None


def test_work_is_balanced_between_the_caller_and_one_child(tmp_path, monkeypatch):
    """A model (1 s of LLVM work for the caller) calling the packed GEMM, im2col, the small-row GEMMs
    and the pool: the parts the packed GEMM calls (its row blocks) are scheduled with it, the largest
    goes to one child, and the rest even out the two."""
    monkeypatch.setenv("TSCRIPT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TSCRIPT_BUILD_PROCESSES", "1")
    quiet_children()
    started = []
    monkeypatch.setattr(child_builds, "build_library", lambda keys, ps: started.append(sorted(ps)))
    parts.prefetch({"packed_gemm", "conv_f32", "gemm", "parallel"}, here=1.0)
    everything = {"packed_gemm", "packed_rows6", "packed_rows", "conv_f32", "gemm", "parallel"}
    assert len(started) == 1 and "packed_rows" in started[0] and set(started[0]) < everything
    child = parts.CHILD_START + sum(parts.cost(p) for p in started[0])
    caller = 1.0 + sum(parts.cost(p) for p in everything - set(started[0]))
    assert abs(child - caller) <= max(parts.cost(p) for p in everything), (child, caller)


def test_without_child_processes_the_part_is_built_here(tmp_path, monkeypatch):
    monkeypatch.setenv("TSCRIPT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TSCRIPT_BUILD_PROCESSES", "0")
    parts.prefetch(["unary_f32"], here=5.0)
    assert not child_builds.wait_for(parts.key("unary_f32"))
    obj, imports = parts.object_of("unary_f32")
    assert obj[:4] == b"\x7fELF" and not imports & library.NAMES


@pytest.mark.parametrize("name", sorted(library.FUNCTIONS))
def test_every_library_function_links(name):
    assert library.addresses([name])[name] > 0
