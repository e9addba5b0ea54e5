"""TSCRIPT_PERF_MAP=1: every function of linked native code is named in /tmp/perf-<pid>.map, at the address
the linker gave it (internal functions placed by an exported one of their section)."""
import os

from tscript_runtime.native import perf_map
from tscript_runtime.native.link import NativeLibrary
from tscript_runtime.native.peak import _fma_loop
from tscript_runtime.native.target import optimize_and_emit

HELPER = """
define internal float @helper(float %x) noinline {
  %y = fmul float %x, 3.0
  ret float %y
}
define float @outer(float %x) {
  %y = call float @helper(float %x)
  ret float %y
}
"""


def test_function_symbols_of_an_object():
    obj = optimize_and_emit(_fma_loop(8))
    names = {name: size for name, _, _, size in perf_map.function_symbols(obj)}
    assert "tscript_peak" in names and names["tscript_peak"] > 0
    assert perf_map.function_symbols(b"not an object") == []


def test_linked_functions_are_mapped(monkeypatch):
    path = f"/tmp/perf-{os.getpid()}.map"
    before = open(path).read() if os.path.exists(path) else ""
    monkeypatch.setenv("TSCRIPT_PERF_MAP", "1")
    library = NativeLibrary(optimize_and_emit(HELPER), ["outer"], set())
    lines = open(path).read()[len(before):].splitlines()
    entries = {line.split()[2].split(":", 1)[1]: int(line.split()[0], 16) for line in lines}
    assert entries["outer"] == library.address("outer")
    assert "helper" in entries and entries["helper"] != entries["outer"]
    if not before:
        os.remove(path)


def test_off_by_default(monkeypatch):
    monkeypatch.delenv("TSCRIPT_PERF_MAP", raising=False)
    assert not perf_map.enabled()
    monkeypatch.setenv("TSCRIPT_PERF_MAP", "0")
    assert not perf_map.enabled()
