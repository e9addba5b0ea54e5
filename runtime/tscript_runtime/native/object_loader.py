"""Placing an x86-64 ELF relocatable object this runtime emitted into executable memory, without LLVM:
a warm load (every object found in the cache) then never starts LLVM, whose shared library alone takes
~20 ms to open. Only objects this runtime emitted itself or read back from its checksummed cache are
ever loaded (link.py).

The object's allocated sections are laid out in one anonymous mapping: code, then a stub per external
function it calls (`jmp *slot`), then read-only data and a slot per symbol whose address it loads
(a GOT), then writable data. Relocations are applied as the x86-64 psABI defines them, every 32-bit one
checked to fit; code ends read+execute, data read-only or read+write. Anything else (another machine,
relocation kind or section kind) raises Unsupported and the caller links with LLVM instead.
"""
from __future__ import annotations

import ctypes
import mmap
import struct
import sys
import weakref

from . import elf

PAGE = mmap.PAGESIZE
MAX_BYTES = 1 << 30  # a mapping larger than any code this runtime emits
_PROT_READ, _PROT_WRITE, _PROT_EXEC = 1, 2, 4
_R_64, _R_PC32, _R_PLT32, _R_GOTPCREL, _R_32, _R_32S, _R_PC64 = 1, 2, 4, 9, 10, 11, 24
_R_GOTPCRELX, _R_REX_GOTPCRELX = 41, 42
_GOT = (_R_GOTPCREL, _R_GOTPCRELX, _R_REX_GOTPCRELX)
_FIELDS = {_R_64: "<Q", _R_PC64: "<q", _R_PC32: "<i", _R_PLT32: "<i", _R_32: "<I", _R_32S: "<i",
           **{k: "<i" for k in _GOT}}


def _limits(field: str) -> tuple:
    """(the field as a Struct, its bytes, the values it holds: low..high-1) of a relocation's field."""
    bits = 8 * struct.calcsize(field)
    low, high = (0, 2 ** bits) if field[1].isupper() else (-2 ** (bits - 1), 2 ** (bits - 1))
    return struct.Struct(field), bits // 8, low, high


_LIMITS = {kind: _limits(f) for kind, f in _FIELDS.items()}  # relocation kind -> its field's _limits
_STUB = 8  # bytes: jmp qword ptr [rip + disp32] (6) and padding
_SHT_RUN_AT_LOAD = (14, 15, 16)  # SHT_INIT_ARRAY, SHT_FINI_ARRAY, SHT_PREINIT_ARRAY
_SHF_TLS = 0x400


class Unsupported(Exception):
    """The object needs something this loader does not do (the caller links it with LLVM)."""


def supported() -> bool:
    """Can objects be loaded here (Linux on x86-64)?"""
    import platform
    return sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")


class LoadedObject:
    """An object placed in memory: `address(name)` of a global function; the memory is unmapped when
    this is dropped (keep it alive while any of its code may run)."""

    def __init__(self, obj: bytes, imports: dict[str, int]):
        try:
            layout = _Layout(obj, imports)
        except (ValueError, struct.error, UnicodeDecodeError) as e:
            raise Unsupported(f"malformed object: {e}") from None
        if layout.size > MAX_BYTES:
            raise Unsupported(f"an object of {layout.size} bytes in memory (at most {MAX_BYTES})")
        self._base, self._size = _map(layout.size)
        self._unmap = weakref.finalize(self, _munmap, self._base, self._size)
        self._unmap.atexit = False  # at exit, daemon threads (the kernel library's worker) may still run it
        try:
            image = layout.image(self._base)
        except (ValueError, struct.error) as e:
            raise Unsupported(f"malformed object: {e}") from None
        ctypes.memmove(self._base, bytes(image), len(image))
        for start, end, prot in layout.protections():
            _mprotect(self._base + start, end - start, prot)
        self.addresses = {name: self._base + offset for name, offset in layout.exports.items()}

    def address(self, name: str) -> int:
        return self.addresses[name]


class _Layout:
    """Where each allocated section, stub and GOT slot of an object goes (offsets from the mapping's
    start), and the image of the mapping once relocated for a given base address."""

    def __init__(self, obj: bytes, imports: dict[str, int]):
        if not elf.is_elf64(obj) or elf.machine(obj) != elf.EM_X86_64 or obj[0x10] != 1:  # ET_REL
            raise Unsupported("not an x86-64 relocatable ELF64 object")
        self.obj, self.imports = obj, imports
        self.sections = elf.sections(obj)
        self.symbols = list(elf.symbols(obj, self.sections))
        self.relocations = [(s.info, list(elf.relocations(obj, s))) for s in self.sections
                            if s.kind == elf.SHT_RELA and self._loaded(s.info)]
        self._check_symbols()
        self.place: dict[int, int] = {}
        code = self._lay(0, lambda s: s.flags & elf.SHF_EXECINSTR)
        self.stubs = self._numbered(r for r in self._all_relocations()
                                    if r.kind == _R_PLT32 and self._symbol(r).section == elf.SHN_UNDEF)
        self.stub_start = _align(code, 16)
        self.read_only = _align(self.stub_start + _STUB * len(self.stubs), PAGE)
        data = self._lay(self.read_only, lambda s: not s.flags & (elf.SHF_EXECINSTR | elf.SHF_WRITE))
        # a slot per symbol whose address is loaded (GOTPCREL) or that a stub jumps through
        self.slots = self._numbered(r for r in self._all_relocations()
                                    if r.kind in _GOT or r.kind == _R_PLT32 and r.symbol in self.stubs)
        self.got = _align(data, 8)
        self.writable = _align(self.got + 8 * len(self.slots), PAGE)
        self.size = max(_align(self._lay(self.writable, lambda s: s.flags & elf.SHF_WRITE), PAGE), PAGE)
        self.exports = {s.name: self.place[s.section] + s.value for s in self.symbols
                        if s.info >> 4 == 1 and s.section in self.place and s.name}  # STB_GLOBAL, defined

    def _loaded(self, index: int) -> bool:
        """Is section `index` placed in memory (allocated, with contents or zeros)? .eh_frame is not:
        nothing here unwinds through this code."""
        if not 0 <= index < len(self.sections):
            raise ValueError(f"section index {index} out of range")
        s = self.sections[index]
        return bool(s.flags & elf.SHF_ALLOC) and s.name != ".eh_frame" and s.size > 0

    def _check_symbols(self) -> None:
        for s in self.sections:  # code that would have to run at load, or thread-local data: not ours
            if s.kind in _SHT_RUN_AT_LOAD or s.flags & _SHF_TLS or s.name.startswith((".init", ".fini", ".ctors",
                                                                                     ".dtors", ".preinit")):
                raise Unsupported(f"section {s.name!r}")
        for s in self.symbols:
            if s.section not in (elf.SHN_UNDEF, elf.SHN_ABS) and s.section >= len(self.sections):
                raise Unsupported(f"symbol {s.name!r} in special section {s.section:#x}")

    def _lay(self, start: int, which) -> int:
        """Place the loaded sections `which` selects from `start`; returns the end."""
        at = start
        for i, s in enumerate(self.sections):
            if self._loaded(i) and which(s):
                at = _align(at, max(s.align, 1))
                self.place[i] = at
                at += s.size
        return at

    def _all_relocations(self):
        for _, entries in self.relocations:
            yield from entries

    def _numbered(self, relocations) -> dict[int, int]:
        """Symbol index -> slot number, for the symbols of `relocations`, in order of first use."""
        out: dict[int, int] = {}
        for r in relocations:
            out.setdefault(r.symbol, len(out))
        return out

    def _symbol(self, r: elf.Relocation) -> elf.Symbol:
        if not 1 <= r.symbol <= len(self.symbols):
            raise ValueError(f"relocation against symbol {r.symbol} of {len(self.symbols)}")
        return self.symbols[r.symbol - 1]

    def _value(self, index: int, base: int) -> int:
        """The address of symbol `index` (S) in a mapping at `base`."""
        s = self.symbols[index - 1]
        if s.section == elf.SHN_UNDEF:
            if s.name not in self.imports:
                raise Unsupported(f"unresolved external {s.name!r}")
            return self.imports[s.name]
        if s.section == elf.SHN_ABS:
            return s.value
        if s.section not in self.place:
            raise Unsupported(f"symbol {s.name!r} in a section that is not loaded")
        return base + self.place[s.section] + s.value

    def image(self, base: int) -> bytearray:
        """The mapping's bytes for a mapping at `base`: sections, stubs and GOT, relocated."""
        image = bytearray(self.size)
        for i, at in self.place.items():
            s = self.sections[i]
            if s.kind != elf.SHT_NOBITS:
                image[at:at + s.size] = self.obj[s.offset:s.offset + s.size]
        for symbol, n in self.slots.items():
            struct.pack_into("<Q", image, self.got + 8 * n, self._value(symbol, base) % 2 ** 64)
        for symbol, n in self.stubs.items():
            at = self.stub_start + _STUB * n
            slot = self.got + 8 * self.slots[symbol]
            image[at:at + 6] = b"\xff\x25" + struct.pack("<i", slot - (at + 6))  # jmp [rip + disp32]
        for target, entries in self.relocations:
            section = self.sections[target]
            for r in entries:
                self._relocate(image, base, self.place[target], section.size, r)
        return image

    def _relocate(self, image: bytearray, base: int, section_at: int, section_size: int, r: elf.Relocation) -> None:
        """Apply one relocation to the section placed at `section_at`."""
        if r.kind not in _LIMITS:
            raise Unsupported(f"relocation type {r.kind}")
        field, size, low, high = _LIMITS[r.kind]
        if r.offset + size > section_size:
            raise ValueError("a relocation outside its section")
        self._symbol(r)
        at = section_at + r.offset
        p = base + at
        if r.kind in _GOT:
            value = base + self.got + 8 * self.slots[r.symbol] + r.addend - p
        elif r.kind == _R_PLT32 and r.symbol in self.stubs:
            value = base + self.stub_start + _STUB * self.stubs[r.symbol] + r.addend - p
        elif r.kind in (_R_PC32, _R_PLT32, _R_PC64):
            value = self._value(r.symbol, base) + r.addend - p
        else:
            value = self._value(r.symbol, base) + r.addend
        if field.format == "<Q":  # (wraps)
            value %= high
        elif not low <= value < high:
            raise Unsupported(f"relocation type {r.kind} out of range ({value:#x})")
        field.pack_into(image, at, value)

    def protections(self) -> list[tuple[int, int, int]]:
        """(start, end, protection) of the mapping's parts: code and stubs, read-only data and GOT."""
        parts = [(0, self.read_only, _PROT_READ | _PROT_EXEC), (self.read_only, self.writable, _PROT_READ)]
        return [(a, b, p) for a, b, p in parts if b > a]


def _align(n: int, to: int) -> int:
    return -(-n // to) * to


_libc = None


def _c():
    global _libc
    if _libc is None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                              ctypes.c_long]
        libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        _libc = libc
    return _libc


def _map(size: int) -> tuple[int, int]:
    address = _c().mmap(None, size, _PROT_READ | _PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    if address in (None, ctypes.c_void_p(-1).value):
        raise Unsupported(f"mmap of {size} bytes for native code failed (errno {ctypes.get_errno()})")
    return address, size


def _mprotect(address: int, size: int, prot: int) -> None:
    if _c().mprotect(address, size, prot) != 0:  # (a policy forbidding executable anonymous memory)
        raise Unsupported(f"mprotect of native code failed (errno {ctypes.get_errno()})")


def _munmap(address: int, size: int) -> None:
    _c().munmap(address, size)
