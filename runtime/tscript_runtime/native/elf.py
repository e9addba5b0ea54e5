"""Reading an ELF64 little-endian relocatable object this runtime emitted: its sections, symbol table and
relocations (what it imports, where its functions are, how to place it in memory: object_loader.py).
Every read is bounds-checked: a malformed object raises ValueError, never reads past its bytes."""
from __future__ import annotations

import struct
from typing import NamedTuple

SHT_SYMTAB, SHT_RELA, SHT_NOBITS = 2, 4, 8
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 0x1, 0x2, 0x4
SHN_UNDEF, SHN_ABS = 0, 0xFFF1
EM_X86_64 = 62
_SECTION = struct.Struct("<IIQQQQIIQQ")  # name, type, flags, addr, offset, size, link, info, addralign, entsize
_SYMBOL = struct.Struct("<IBBHQQ")       # name, info, other, section index, value, size
_RELA = struct.Struct("<QQq")            # offset, info (symbol << 32 | type), addend


class Section(NamedTuple):
    name: str
    kind: int
    flags: int
    offset: int
    size: int
    link: int
    info: int
    align: int
    entsize: int


class Symbol(NamedTuple):
    name: str
    info: int
    section: int
    value: int
    size: int


class Relocation(NamedTuple):
    offset: int
    symbol: int
    kind: int
    addend: int


def is_elf64(obj: bytes) -> bool:
    return obj[:6] == b"\x7fELF\x02\x01"


def machine(obj: bytes) -> int:
    """e_machine (62: x86-64)."""
    return _unpack(struct.Struct("<H"), obj, 0x12)[0]


def sections(obj: bytes) -> list[Section]:
    """Every section header, with its name."""
    (shoff,) = _unpack(struct.Struct("<Q"), obj, 0x28)
    shentsize, shnum, shstrndx = _unpack(struct.Struct("<HHH"), obj, 0x3A)
    if shentsize != _SECTION.size:
        raise ValueError(f"section headers of {shentsize} bytes (expected {_SECTION.size})")
    raw = [_unpack(_SECTION, obj, shoff + i * shentsize) for i in range(shnum)]
    if not 0 <= shstrndx < shnum:
        raise ValueError("no section name table")
    names = raw[shstrndx][4]
    out = []
    for name, kind, flags, _, offset, size, link, info, align, entsize in raw:
        if kind != SHT_NOBITS and offset + size > len(obj):
            raise ValueError("a section extends past the end of the object")
        out.append(Section(_string(obj, names + name), kind, flags, offset, size, link, info, align, entsize))
    return out


def symbols(obj: bytes, table: list[Section] | None = None):
    """(name, info, section index, value, size) of each symbol but the null one, in table order."""
    table = sections(obj) if table is None else table
    for s in table:
        if s.kind != SHT_SYMTAB:
            continue
        if not 0 <= s.link < len(table):
            raise ValueError("symbol table without a string table")
        strings = table[s.link].offset
        for at in range(s.offset + _SYMBOL.size, s.offset + s.size, _SYMBOL.size):  # entry 0: the null symbol
            name, info, _, section, value, length = _unpack(_SYMBOL, obj, at)
            yield Symbol(_string(obj, strings + name), info, section, value, length)


def relocations(obj: bytes, section: Section):
    """The entries of a SHT_RELA section."""
    whole = section.size // _RELA.size * _RELA.size
    if whole:
        _unpack(_RELA, obj, section.offset + whole - _RELA.size)  # (the last whole entry is in the object)
        entries = _RELA.iter_unpack(memoryview(obj)[section.offset:section.offset + whole])
        for offset, info, addend in entries:
            yield Relocation(offset, info >> 32, info & 0xFFFFFFFF, addend)
    if whole < section.size:  # a part entry at the end: read as far as the object goes
        offset, info, addend = _unpack(_RELA, obj, section.offset + whole)
        yield Relocation(offset, info >> 32, info & 0xFFFFFFFF, addend)


def _unpack(layout: struct.Struct, obj: bytes, at: int) -> tuple:
    if at < 0 or at + layout.size > len(obj):
        raise ValueError(f"a read at {at} past the end of the object ({len(obj)} bytes)")
    return layout.unpack_from(obj, at)


def _string(obj: bytes, start: int) -> str:
    end = obj.find(b"\0", start)
    if start < 0 or end < 0:
        raise ValueError("a name past the end of the object")
    return obj[start:end].decode()
