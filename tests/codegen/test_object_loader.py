"""The runtime's own object loader (native/object_loader.py): code it places runs as the code LLVM's
linker places (kernels, the whole-graph entry, the kernel library's calls out), a warm load of a saved
model never starts LLVM, and objects it cannot place are refused with Unsupported, never run."""
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

import tscript as ts
from tscript import nn
from tscript_runtime.native import elf, object_loader
from tscript_runtime.native.link import NativeLibrary
from tscript_runtime.native.target import optimize_and_emit

pytestmark = pytest.mark.skipif(not object_loader.supported(), reason="the loader places x86-64 Linux objects")

# A function calling an external (a stub through the GOT), loading an external's address (GOTPCREL),
# reading a constant table (PC32 into .rodata) and writing a global (.bss).
SOURCE = r"""
@table = internal constant [4 x double] [double 1.5, double 2.5, double 3.5, double 4.5], align 64
@counter = internal global i64 0
declare double @sqrt(double)
declare ptr @memset(ptr, i32, i64)

define double @pick(i64 %i) {
  %p = getelementptr [4 x double], ptr @table, i64 0, i64 %i
  %v = load double, ptr %p
  %r = call double @sqrt(double %v)
  %c = load i64, ptr @counter
  %c1 = add i64 %c, 1
  store i64 %c1, ptr @counter
  ret double %r
}

define i64 @calls() {
  %c = load i64, ptr @counter
  ret i64 %c
}

define ptr @where_is_memset() {
  ret ptr @memset
}
"""


def placed(obj: bytes, imports: dict) -> object_loader.LoadedObject:
    return object_loader.LoadedObject(obj, imports)


@pytest.fixture(scope="module")
def obj():
    return optimize_and_emit(SOURCE)


def test_calls_out_tables_and_globals(obj):
    import ctypes
    from tscript_runtime.native.link import external_addresses
    imports = external_addresses({"sqrt", "memset"})
    loaded = placed(obj, imports)
    pick = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_int64)(loaded.address("pick"))
    calls = ctypes.CFUNCTYPE(ctypes.c_int64)(loaded.address("calls"))
    where = ctypes.CFUNCTYPE(ctypes.c_void_p)(loaded.address("where_is_memset"))
    assert [pick(i) for i in range(4)] == [np.sqrt(v) for v in (1.5, 2.5, 3.5, 4.5)]
    assert calls() == 4
    assert where() == imports["memset"]


def test_code_is_not_writable_and_data_is(obj):
    from tscript_runtime.native.link import external_addresses
    loaded = placed(obj, external_addresses({"sqrt", "memset"}))
    code = loaded.address("pick")
    with open("/proc/self/maps") as f:
        for line in f:
            span, perms = line.split()[:2]
            start, end = (int(v, 16) for v in span.split("-"))
            if start <= code < end:
                assert perms.startswith("r-x"), perms
                break
        else:
            pytest.fail("the code's mapping is not in /proc/self/maps")


def test_an_unresolved_external_is_unsupported(obj):
    with pytest.raises(object_loader.Unsupported, match="unresolved external 'sqrt'"):
        placed(obj, {})


def test_constructors_are_unsupported():
    """Code that would have to run when loaded (a global constructor) is left to LLVM's linker."""
    source = SOURCE + """
@llvm.global_ctors = appending global [1 x { i32, ptr, ptr }] [{ i32, ptr, ptr } { i32 65535, ptr @init, ptr null }]
define internal void @init() {
  store volatile i64 41, ptr @counter
  ret void
}
"""
    from tscript_runtime.native.link import external_addresses
    with pytest.raises(object_loader.Unsupported, match="init_array|ctors"):
        placed(optimize_and_emit(source), external_addresses({"sqrt", "memset"}))


@pytest.mark.parametrize("damage", ["truncated", "machine", "section_offset", "relocation_symbol", "relocation_kind"])
def test_damaged_objects_are_refused(obj, damage):
    from tscript_runtime.native.link import external_addresses
    data = bytearray(obj)
    sections = elf.sections(obj)
    rela = next(s for s in sections if s.kind == elf.SHT_RELA and s.size)
    if damage == "truncated":
        data = data[:len(data) // 2]
    elif damage == "machine":
        struct.pack_into("<H", data, 0x12, 183)  # aarch64
    elif damage == "section_offset":
        (shoff,) = struct.unpack_from("<Q", obj, 0x28)
        text = next(i for i, s in enumerate(sections) if s.name == ".text")
        struct.pack_into("<Q", data, shoff + text * 64 + 24, len(obj) * 4)
    elif damage == "relocation_symbol":
        struct.pack_into("<Q", data, rela.offset + 8, (10**6 << 32) | 2)
    else:
        struct.pack_into("<Q", data, rela.offset + 8, (1 << 32) | 37)  # R_X86_64_GOTOFF64? not ours
    with pytest.raises(object_loader.Unsupported):
        placed(bytes(data), external_addresses({"sqrt", "memset"}))


def test_native_library_falls_back_to_llvm(obj, monkeypatch):
    """What the loader refuses is linked by LLVM: the same results either way."""
    import ctypes

    def refuse(*_):
        raise object_loader.Unsupported("test")
    monkeypatch.setattr(object_loader, "LoadedObject", refuse)
    library = NativeLibrary(obj, ["pick"], {"sqrt", "memset"})
    assert library._loaded is None
    pick = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_int64)(library.address("pick"))
    assert pick(2) == np.sqrt(3.5)


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 6 * 6, 5)

    def forward(self, x):
        return self.fc(ts.flatten(ts.relu(self.conv(x)), 1)).softmax(-1)


WARM = """
import sys
import numpy as np
import tscript_runtime
x = np.load(sys.argv[2])
out = tscript_runtime.load(sys.argv[1]).run(x)
np.save(sys.argv[3], out)
print("llvm started" if "llvmlite.binding" in sys.modules else "no llvm")
"""


def test_warm_load_never_starts_llvm(tmp_path):
    """A fresh process loading a model whose code is in the cache links it and the kernel library
    without importing llvmlite.binding, and computes what the compiled model computes."""
    ts.manual_seed(0)
    model = Small().eval()
    x = ts.randn(2, 3, 6, 6)
    compiled = ts.jit.compile(model, (x,))
    ts.jit.save(compiled, tmp_path / "m.tsm")
    np.save(tmp_path / "x.npy", x.numpy())
    env = {**os.environ, "TSCRIPT_CACHE_DIR": str(tmp_path / "cache")}
    runs = [subprocess.run([sys.executable, "-c", WARM, str(tmp_path / "m.tsm"), str(tmp_path / "x.npy"),
                            str(tmp_path / f"out{i}.npy")], capture_output=True, text=True, env=env, timeout=600)
            for i in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[-1].stderr
    assert [r.stdout.split()[-2:] for r in runs] == [["llvm", "started"], ["no", "llvm"]]
    for i in range(2):
        np.testing.assert_allclose(np.load(tmp_path / f"out{i}.npy"), compiled(x).numpy(), rtol=1e-6, atol=1e-7)
