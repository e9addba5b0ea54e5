"""Names for JIT-linked code in profilers: with TSCRIPT_PERF_MAP=1 in the environment, every function of
every object this runtime links is appended to /tmp/perf-<pid>.map (the format `perf report` and py-spy
read), internal functions too, so a profile of a native call names its kernels instead of raw addresses.

An object's function symbols give offsets within their sections; the address the linker gave one exported
function of a section places the whole section (ORC links each section contiguously)."""
from __future__ import annotations

import os

from . import elf

_STT_FUNC = 2


def enabled() -> bool:
    return os.environ.get("TSCRIPT_PERF_MAP", "") not in ("", "0")


def function_symbols(obj: bytes) -> list[tuple[str, int, int, int]]:
    """(name, section index, offset, size) of each defined function of an ELF64 little-endian object."""
    if not elf.is_elf64(obj):
        return []
    return [(name, section, value, size) for name, info, section, value, size in elf.symbols(obj)
            if info & 0xF == _STT_FUNC and section != 0 and size]


def record(obj: bytes, addresses: dict[str, int], prefix: str) -> None:
    """Append the object's functions to this process's perf map (`addresses`: the exported ones)."""
    symbols = function_symbols(obj)
    bases = {section: addresses[name] - offset for name, section, offset, _ in symbols if name in addresses}
    lines = [f"{bases[section] + offset:x} {size:x} {prefix}:{name}\n"
             for name, section, offset, size in symbols if section in bases]
    with open(f"/tmp/perf-{os.getpid()}.map", "a") as f:
        f.writelines(lines)
