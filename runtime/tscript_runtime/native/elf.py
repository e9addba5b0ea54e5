"""The symbol table of an ELF64 little-endian object this runtime emitted (what it imports, where its
functions are)."""
from __future__ import annotations

import struct

_SHT_SYMTAB = 2


def is_elf64(obj: bytes) -> bool:
    return obj[:6] == b"\x7fELF\x02\x01"


def symbols(obj: bytes):
    """(name, info, section index, value, size) of each symbol but the null one."""
    (shoff,) = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    # Section header: name, type, flags, addr, offset, size, link, info, addralign, entsize.
    sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)]
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != _SHT_SYMTAB:
            continue
        strings = sections[link][4]
        for at in range(offset + entsize, offset + size, entsize):  # entry 0 is the null symbol
            name, info, _, section, value, length = struct.unpack_from("<IBBHQQ", obj, at)
            start = strings + name
            yield obj[start:obj.index(b"\0", start)].decode(), info, section, value, length
