"""Native code: the host TargetMachine, LLVM IR -> object code, loading objects with ORC (LLJIT),
the allow-list of external functions stored IR may declare, and the BLAS library found inside
numpy's wheel. Used by the compiler (tscript.codegen) and by the standalone runtime, which
recompiles stored IR when the stored object code was built for another CPU.
"""
from __future__ import annotations

import ctypes
import glob
import hashlib
import os
import re
import struct
import threading

from .errors import ModelError
from .library import NAMES as LIBRARY_FUNCTIONS

_lock = threading.Lock()  # llvmlite binding calls are not thread-safe across these steps
_state: dict = {}

# External functions stored LLVM IR may declare: libm (ldexpf is what `llvm.ldexp` becomes on CPUs
# without AVX-512), memory, LLVM intrinsics, the CBLAS entry points of the BLAS bundled with numpy,
# and tscript's kernel library (library/). Anything else is refused at load.
ALLOWED_EXTERNALS = {
    "expf", "exp", "logf", "log", "tanhf", "tanh", "erff", "erf", "sqrtf", "sqrt", "powf", "pow", "fabsf", "fabs",
    "log1pf", "log1p", "expm1f", "expm1", "sinf", "sin", "cosf", "cos", "floorf", "floor", "ceilf", "ceil",
    "fmodf", "fmod", "roundf", "round", "truncf", "trunc", "memcpy", "memset", "memmove", "malloc", "free",
    "aligned_alloc", "ldexpf", "ldexp",
}
BLAS_SYMBOLS = {"cblas_sgemm": "scipy_cblas_sgemm64_", "cblas_dgemm": "scipy_cblas_dgemm64_",
                "cblas_sgemv": "scipy_cblas_sgemv64_", "cblas_dgemv": "scipy_cblas_dgemv64_"}
ALLOWED_EXTERNALS |= set(BLAS_SYMBOLS) | LIBRARY_FUNCTIONS
_DECLARE = re.compile(r"^declare\b[^@]*@\"?([\w.$]+)\"?\s*\(", re.M)


def _llvm():
    import llvmlite.binding as llvm
    if "init" not in _state:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        llvm.initialize_native_asmparser()
        _state["init"] = True
    return llvm


def host() -> dict:
    """The host's target triple, CPU name and features (what object code is built for)."""
    llvm = _llvm()
    if "host" not in _state:
        _state["host"] = {"triple": llvm.get_default_triple(), "cpu": llvm.get_host_cpu_name(),
                          "features": llvm.get_host_cpu_features().flatten()}
    return _state["host"]


def target_machine():
    """The one TargetMachine for the host CPU (all its features, O3)."""
    llvm = _llvm()
    if "tm" not in _state:
        h = host()
        target = llvm.Target.from_default_triple()
        _state["tm"] = target.create_target_machine(cpu=h["cpu"], features=h["features"], opt=3, reloc="pic",
                                                    codemodel="default", jit=True)
    return _state["tm"]


def declared_externals(ll_text: str) -> set[str]:
    """Names of the functions the IR declares (and does not define)."""
    return {m for m in _DECLARE.findall(ll_text) if not m.startswith("llvm.")}


def check_externals(ll_text: str, where: str = "stored LLVM IR") -> None:
    """Refuse IR that declares a function outside the allow-list."""
    bad = sorted(declared_externals(ll_text) - ALLOWED_EXTERNALS)
    if bad:
        raise ModelError(f"{where} declares external function(s) not on the allow-list: {', '.join(bad)}")


def object_externals(obj: bytes) -> set[str] | None:
    """Names of the undefined symbols an ELF64 little-endian object references (what the linker
    will resolve from the process), or None when the object is in another format. A malformed ELF
    object is a ModelError."""
    if obj[:6] != b"\x7fELF\x02\x01":
        return None
    try:
        return _elf_undefined(obj)
    except (struct.error, IndexError, ValueError, UnicodeDecodeError) as e:
        raise ModelError(f"not a valid ELF object file ({e})") from None


_SHT_SYMTAB = 2


def _elf_undefined(obj: bytes) -> set[str]:
    (shoff,) = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    # Section header: name, type, flags, addr, offset, size, link, info, addralign, entsize.
    sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)]
    names = set()
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != _SHT_SYMTAB:
            continue
        strings = sections[link][4]
        for at in range(offset + entsize, offset + size, entsize):  # entry 0 is the null symbol
            name, _, _, section = struct.unpack_from("<IBBH", obj, at)
            if section == 0 and name:  # SHN_UNDEF: resolved at link time
                start = strings + name
                names.add(obj[start:obj.index(b"\0", start)].decode())
    return names


def check_object(obj: bytes, where: str = "stored object code") -> bool:
    """Refuse object code that references a function outside the allow-list (the linker would
    resolve it from the process); False when the object's format cannot be inspected here."""
    try:
        names = object_externals(obj)
    except ModelError as e:
        raise ModelError(f"{where}: {e}") from None
    if names is None:
        return False
    bad = sorted(names - ALLOWED_EXTERNALS)
    if bad:
        raise ModelError(f"{where} references external function(s) not on the allow-list: {', '.join(bad)}")
    return True


def fits_host(target: dict) -> bool:
    """Was object code built for `target` (triple, cpu, features) built for exactly this host?"""
    h = host()
    return (target.get("target_triple"), target.get("cpu"), target.get("cpu_features")) == \
        (h["triple"], h["cpu"], h["features"])


def _optimized_module(ll_text: str):
    """Parse, verify and optimize (O3 with loop and SLP vectorization) for the host; call under `_lock`."""
    llvm = _llvm()
    tm = target_machine()
    module = llvm.parse_assembly(ll_text)
    module.triple, module.data_layout = tm.triple, str(tm.target_data)
    module.verify()
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = pto.slp_vectorization = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(module, pb)
    return module


def optimize_and_emit(ll_text: str) -> bytes:
    """Object code for the host from LLVM IR text (optimized as `_optimized_module`)."""
    with _lock:
        return target_machine().emit_object(_optimized_module(ll_text))


def optimized_ir(ll_text: str) -> str:
    """The IR after optimization (for inspecting whether a kernel vectorized)."""
    with _lock:
        return str(_optimized_module(ll_text))


def assembly(ll_text: str) -> str:
    """The host assembly of the optimized IR (to check vectorization)."""
    with _lock:
        return target_machine().emit_assembly(_optimized_module(ll_text))


def blas_library() -> str | None:
    """Path of the OpenBLAS numpy bundles (ILP64, `scipy_cblas_*64_` symbols), if present."""
    if "blas" not in _state:
        import numpy
        base = os.path.join(os.path.dirname(numpy.__file__), os.pardir, "numpy.libs")
        found = sorted(glob.glob(os.path.join(base, "libscipy_openblas64_*.so")))
        _state["blas"] = found[0] if found else None
    return _state["blas"]


def external_addresses(names: set[str]) -> dict[str, int]:
    """Addresses for the externals an object needs (libm from the process, BLAS from numpy's lib)."""
    out = {}
    libc = ctypes.CDLL(None)
    blas = None
    for name in names:
        if name in LIBRARY_FUNCTIONS:
            from .library import addresses
            out[name] = addresses()[name]
        elif name in BLAS_SYMBOLS:
            if blas is None:
                path = blas_library()
                if path is None:
                    raise ModelError("native code needs BLAS, but numpy's bundled OpenBLAS was not found; "
                                     "the reference kernels will be used instead")
                blas = ctypes.CDLL(path)
            out[name] = ctypes.cast(getattr(blas, BLAS_SYMBOLS[name]), ctypes.c_void_p).value
        else:
            try:
                out[name] = ctypes.cast(getattr(libc, name), ctypes.c_void_p).value
            except AttributeError:
                libm = ctypes.CDLL("libm.so.6")
                out[name] = ctypes.cast(getattr(libm, name), ctypes.c_void_p).value
    return out


class NativeLibrary:
    """Object code linked into the process; `address(name)` gives an exported function's address.
    Keep the library alive while any of its code may run."""
    _count = 0

    def __init__(self, obj: bytes, exports: list[str], externals: set[str]):
        llvm = _llvm()
        imports = external_addresses(externals)  # before `_lock`: the kernel library may link itself here
        with _lock:
            if "lljit" not in _state:
                _state["lljit"] = llvm.create_lljit_compiler()
            builder = llvm.JITLibraryBuilder().add_object_img(obj)
            for name, addr in imports.items():
                builder.import_symbol(name, addr)
            for name in exports:
                builder.export_symbol(name)
            NativeLibrary._count += 1
            self._tracker = builder.link(_state["lljit"], f"tscript_native_{NativeLibrary._count}")
            self._addresses = {name: self._tracker[name] for name in exports}

    def address(self, name: str) -> int:
        return self._addresses[name]


def cache_dir() -> str:
    """Where compiled objects are cached (TSCRIPT_CACHE_DIR, default ~/.cache/tscript)."""
    return os.environ.get("TSCRIPT_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "tscript")


def cache_key(ll_text: str) -> str:
    h = host()
    return hashlib.sha256("\n".join([ll_text, h["triple"], h["cpu"], h["features"]]).encode()).hexdigest()


def compile_cached(ll_text: str) -> bytes:
    """Object code for `ll_text` on this host, from the on-disk cache when present."""
    path = os.path.join(cache_dir(), cache_key(ll_text) + ".o")
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        pass
    obj = optimize_and_emit(ll_text)
    try:
        os.makedirs(cache_dir(), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "wb") as f:
            f.write(obj)
        os.replace(tmp, path)
    except OSError:  # a read-only home is no reason to fail: just do not cache
        pass
    return obj
