"""Linking emitted object code into the process with ORC (LLJIT): the external functions emitted
code may call (libm, the CBLAS entry points of the BLAS bundled with numpy, the kernel library) and
their addresses. Only objects this runtime emitted itself (or read back from its checksummed cache)
are ever linked."""
from __future__ import annotations

import ctypes
import os

from . import elf, object_loader, perf_map
from .library import NAMES as LIBRARY_FUNCTIONS
from .target import LLVM_LOCK, binding

_state: dict = {}

BLAS_SYMBOLS = {"cblas_sgemm": "scipy_cblas_sgemm64_", "cblas_dgemm": "scipy_cblas_dgemm64_",
                "cblas_sgemv": "scipy_cblas_sgemv64_", "cblas_dgemv": "scipy_cblas_dgemv64_"}


# What emitted model code may import: libm (the double versions of what mathlib.py writes inline for
# floats, and what LLVM lowers intrinsics to: ldexpf on CPUs without AVX-512), memory functions, the
# CBLAS entry points of the BLAS bundled with numpy, and the kernel library.
MODEL_IMPORTS = frozenset({
    "expf", "exp", "logf", "log", "tanhf", "tanh", "erff", "erf", "sqrtf", "sqrt", "powf", "pow", "sinf", "sin",
    "cosf", "cos", "floorf", "floor", "ceilf", "ceil", "roundf", "round", "roundevenf", "roundeven", "truncf",
    "trunc", "ldexpf", "ldexp", "fmaxf", "fmax", "fminf", "fmin", "memcpy", "memset", "memmove",
    "log2f", "log2", "tanf", "tan", "asinf", "asin", "acosf", "acos", "atanf", "atan", "fmodf", "fmod",
    "log1pf", "log1p", "expm1f", "expm1",
}) | frozenset(BLAS_SYMBOLS) | LIBRARY_FUNCTIONS


def declared_functions(module) -> set[str]:
    """The external functions an llvmlite module declares (LLVM intrinsics aside)."""
    return {f.name for f in module.functions if f.is_declaration and not f.name.startswith("llvm.")}


def imports_of(module, obj: bytes) -> set[str]:
    """What the object code emitted from `module` imports when linked: for ELF objects, its undefined
    symbols (what the optimized code still calls: a branch LLVM removed imports nothing; an intrinsic
    LLVM lowered to libm does), else every function the module declares."""
    return imports_of_declared(declared_functions(module), obj)


def imports_of_declared(declared: set[str], obj: bytes) -> set[str]:
    """`imports_of` for a module declaring the functions `declared`."""
    return undefined_symbols(obj) if elf.is_elf64(obj) else declared


def undefined_symbols(obj: bytes) -> set[str]:
    """The undefined symbols of an ELF object (SHN_UNDEF: resolved at link time)."""
    return {name for name, _, section, _, _ in elf.symbols(obj) if section == 0 and name}


def blas_library() -> str | None:
    """Path of the OpenBLAS numpy bundles (ILP64, `scipy_cblas_*64_` symbols), if present."""
    if "blas" not in _state:
        import glob

        import numpy
        base = os.path.join(os.path.dirname(numpy.__file__), os.pardir, "numpy.libs")
        found = sorted(glob.glob(os.path.join(base, "libscipy_openblas64_*.so")))
        _state["blas"] = found[0] if found else None
    return _state["blas"]


def external_addresses(names: set[str]) -> dict[str, int]:
    """Addresses for the externals an object needs (libm from the process, BLAS from numpy's lib)."""
    out = {}
    wanted = names & LIBRARY_FUNCTIONS
    if wanted:
        from .library import addresses
        found = addresses(wanted)
    for name in names:
        if name in LIBRARY_FUNCTIONS:
            out[name] = found[name]
        elif name in BLAS_SYMBOLS:
            out[name] = _address(_blas(), BLAS_SYMBOLS[name])
        else:  # libm and libc, from the process
            try:
                out[name] = _address(_dll(None), name)
            except AttributeError:
                out[name] = _address(_dll("libm.so.6"), name)
    return out


def _dll(path: str | None) -> ctypes.CDLL:
    """A shared library of the process, opened once (ctypes keeps its functions' pointers)."""
    key = ("dll", path)
    if key not in _state:
        _state[key] = ctypes.CDLL(path)
    return _state[key]


def _blas() -> ctypes.CDLL:
    path = blas_library()
    if path is None:
        raise RuntimeError("native code needs BLAS, but numpy's bundled OpenBLAS was not found; "
                           "the reference kernels will be used instead")
    return _dll(path)


def _address(dll: ctypes.CDLL, name: str) -> int:
    return ctypes.cast(getattr(dll, name), ctypes.c_void_p).value


# llvmlite never removes a JITDylib from its LLJIT: dropping a library's tracker frees its code but
# leaves its empty JITDylib (~9 KB) behind for the LLJIT's life. So every LIBRARIES_PER_JIT libraries
# are linked into a new LLJIT; each tracker holds a reference to its LLJIT, which is freed (with all
# its JITDylibs) when the last library linked into it is dropped.
LIBRARIES_PER_JIT = 32


def _jit():
    """The LLJIT the next library is linked into (call under LLVM_LOCK)."""
    if _state.get("linked", LIBRARIES_PER_JIT) >= LIBRARIES_PER_JIT:
        _state["lljit"], _state["linked"] = binding().create_lljit_compiler(), 0
    _state["linked"] += 1
    return _state["lljit"]


class NativeLibrary:
    """Object code linked into the process; `address(name)` gives an exported function's address.
    Keep the library alive while any of its code may run: its code is unloaded when it is dropped.
    On Linux x86-64 the object is placed by object_loader.py (no LLVM started); anything it does not
    handle is linked by ORC (LLJIT) instead, as everywhere else."""
    _count = 0

    def __init__(self, obj: bytes, exports: list[str], externals: set[str]):
        imports = external_addresses(externals)  # first: the kernel library may link itself here
        NativeLibrary._count += 1
        name = f"tscript_native_{NativeLibrary._count}"
        self._loaded = _load_here(obj, exports, imports)
        if self._loaded is not None:
            self._addresses = {n: self._loaded.address(n) for n in exports}
        else:
            self._addresses = self._link_with_llvm(obj, exports, imports, name)
        if perf_map.enabled():
            perf_map.record(obj, self._addresses, name)

    def _link_with_llvm(self, obj: bytes, exports: list[str], imports: dict[str, int], name: str) -> dict:
        llvm = binding()
        with LLVM_LOCK:
            builder = llvm.JITLibraryBuilder().add_object_img(obj)
            for symbol, addr in imports.items():
                builder.import_symbol(symbol, addr)
            for symbol in exports:
                builder.export_symbol(symbol)
            self._tracker = builder.link(_jit(), name)
            return {symbol: self._tracker[symbol] for symbol in exports}

    def address(self, name: str) -> int:
        return self._addresses[name]


def _load_here(obj: bytes, exports: list[str], imports: dict[str, int]):
    """The object placed by object_loader (None: where it does not apply, or the object needs
    what it does not do, or TSCRIPT_LINKER=llvm asks for LLVM's linker)."""
    if os.environ.get("TSCRIPT_LINKER", "") == "llvm" or not object_loader.supported():
        return None
    try:
        loaded = object_loader.LoadedObject(obj, imports)
    except object_loader.Unsupported:
        return None
    return loaded if all(n in loaded.addresses for n in exports) else None
