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
    """The packed GEMM calls the two-thread pool of the `parallel` part: an import, not a copy."""
    obj, imports = parts.object_of("packed_gemm")
    assert "tscript_parallel2" in imports
    assert not imports & set(parts.names_of("packed_gemm"))
    _, pool_imports = parts.object_of("parallel")
    assert not pool_imports & library.NAMES


def test_a_process_links_only_what_it_needs(tmp_path):
    """Asking for the packed GEMM links it and the pool it calls, nothing else; a child process
    compiled the second part into the cache meanwhile."""
    env = {**os.environ, "TSCRIPT_CACHE_DIR": str(tmp_path)}
    assert linked_parts(["tscript_sgemm_f32"], env) == ["packed_gemm", "parallel"]
    assert linked_parts(["tscript_max_pool2d_f64", "tscript_erf_f32"], env) == ["conv_f64", "unary_f32"]
    objects = sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".o")
    assert len(objects) == 4


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
    """The packed GEMM (1.4 s) goes to the child while the caller compiles a 1 s model; the small parts
    stay with the caller, and no second child starts."""
    monkeypatch.setenv("TSCRIPT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TSCRIPT_BUILD_PROCESSES", "1")
    quiet_children()
    started = []
    monkeypatch.setattr(child_builds, "build_library", lambda keys, ps: started.append(sorted(ps)))
    parts.prefetch({"packed_gemm", "conv_f32", "gemm", "parallel"}, here=1.0)
    assert len(started) == 1 and "packed_gemm" in started[0]
    assert not {"conv_f32", "gemm"} & set(started[0])


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
