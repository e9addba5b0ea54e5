"""Structured mutations of PyTorch checkpoints (the zip format of torch.save), shared by
fuzz_checkpoint.py and tests/eager/test_fuzz_checkpoint.py.

A checkpoint is edited as `Checkpoint` (its archive directory and members). A mutation changes one
thing: in `data.pkl`, an opcode is deleted, duplicated, moved, or has its argument changed (ints
to nearby and odd numbers, strings to names of globals, storage keys and dtypes), or a snippet is
inserted (GLOBAL/STACK_GLOBAL of allowed and forbidden names, REDUCE, BUILD, memo gets and puts,
marks, tuple and container opcodes); or a storage's bytes are cut, grown or changed; or the
byteorder/version member, a member's name, or the member list changes. `to_bytes` writes a
consistent zip (CRCs recomputed): the mutation reaches the reader's real parsing.

The forbidden names call `touch MARKER` when run: a harness checks the marker never appears.
Decisions come from a `Choices` (mutations.py); the same choices always give the same file.
"""
from __future__ import annotations

import io
import os
import pickletools
import struct
import zipfile
from dataclasses import dataclass

if __package__:  # imported as fuzz.checkpoint_mutations (by the tests)
    from .mutations import NUMBERS, Choices, pick
else:  # beside the harnesses
    from mutations import NUMBERS, Choices, pick

MARKER = os.path.join(os.environ.get("FUZZ_FINDINGS", "/tmp/fuzz-findings"), "checkpoint", "RAN-CODE")
NAMES = ["torch._utils _rebuild_tensor_v2", "torch._utils _rebuild_tensor", "torch._utils _rebuild_tensor_v3",
         "torch._utils _rebuild_parameter", "torch._utils _rebuild_parameter_with_state",
         "torch._tensor _rebuild_from_type_v2", "collections OrderedDict", "torch FloatStorage", "torch LongStorage",
         "torch BoolStorage", "torch IntStorage", "torch DoubleStorage", "torch UntypedStorage", "torch HalfStorage",
         "torch Size", "torch device", "torch float32", "torch int64", "torch bfloat16", "torch Tensor",
         "torch.nn.parameter Parameter", "__builtin__ set", "builtins frozenset", "builtins bytearray",
         "_codecs encode", "os system", "posix system", "builtins eval", "builtins getattr", "subprocess call",
         "torch load", "numpy.core.multiarray _reconstruct", "copyreg _reconstructor"]
INTS = [n for n in NUMBERS if isinstance(n, int)]
STRINGS = ["storage", "cpu", "cuda:0", "0", "1", "2", "99", "", "latin1", "utf-8", "_metadata", "weight",
           f"touch {MARKER}", "\u00e9", "x" * 300]


def _unicode(text: str) -> bytes:
    data = text.encode()
    return b"X" + struct.pack("<I", len(data)) + data


def _global(name: str) -> bytes:
    return b"c" + name.replace(" ", "\n").encode() + b"\n"


def _stack_global(name: str) -> bytes:
    module, attr = name.split(" ")
    return _unicode(module) + _unicode(attr) + b"\x93"


# Opcodes (with arguments) worth inserting anywhere.
SNIPPETS = [b"R", b"b", b"(", b"t", b")", b"\x85", b"\x86", b"\x87", b"0", b"1", b"2", b"}", b"]", b"e", b"a", b"s",
            b"u", b"N", b"\x88", b"\x89", b"\x8f", b"\x90", b"\x91", b"\x81", b".", b"Q", b"h\x00", b"h\x05",
            b"q\x00", b"q\x07", b"r\xff\xff\xff\x7f", b"j\x00\x01\x00\x00", b"\x94", b"K\x00", b"K\xff",
            b"J\xff\xff\xff\xff", b"\x8a\x01\xff", b"G\x7f\xf0\x00\x00\x00\x00\x00\x00", b"C\x02\x00\x01",
            b"\x82\x01", b"P0\n", b"i__builtin__\nset\n", b"o"]


@dataclass
class Checkpoint:
    """A checkpoint opened for editing: its archive directory ("archive") and members by name in it."""
    prefix: str
    members: dict

    @classmethod
    def from_bytes(cls, data: bytes) -> "Checkpoint":
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            prefix = zf.namelist()[0].split("/")[0]
            return cls(prefix, {n[len(prefix) + 1:]: zf.read(n) for n in zf.namelist()})

    def copy(self) -> "Checkpoint":
        return Checkpoint(self.prefix, dict(self.members))

    def to_bytes(self) -> bytes:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
            for name, data in self.members.items():
                zf.writestr(f"{self.prefix}/{name}", data)
        return buf.getvalue()


def mutate_checkpoint(checkpoint: Checkpoint, choices: Choices) -> Checkpoint:
    """A copy of `checkpoint` with one to four mutations."""
    out = checkpoint.copy()
    for _ in range(1 + choices.index(4)):
        pick(choices, MUTATIONS)(out, choices)
    return out


def _opcodes(data: bytes) -> list:
    """[(start, end)] of every opcode of a (valid) pickle, or the whole as one piece if it is not."""
    try:
        ops = [pos for _, _, pos in pickletools.genops(data)]
    except Exception:  # an earlier mutation broke it: edit it as bytes
        return [(0, len(data))]
    return list(zip(ops, ops[1:] + [len(data)]))


def mutate_pickle(c: Checkpoint, choices: Choices) -> None:
    data = c.members.get("data.pkl", b"")
    ops = _opcodes(data) or [(0, 0)]
    start, end = pick(choices, ops)
    action = choices.index(5)
    if action == 0:  # delete
        data = data[:start] + data[end:]
    elif action == 1:  # duplicate
        data = data[:end] + data[start:end] + data[end:]
    elif action == 2:  # move elsewhere
        piece, rest = data[start:end], data[:start] + data[end:]
        at = pick(choices, _opcodes(rest) or [(0, 0)])[0]
        data = rest[:at] + piece + rest[at:]
    elif action == 3:  # insert a snippet
        data = data[:start] + _snippet(choices) + data[start:]
    else:
        data = data[:start] + _changed_argument(data[start:end], choices) + data[end:]
    c.members["data.pkl"] = data


def _snippet(choices: Choices) -> bytes:
    kind = choices.index(4)
    if kind == 0:
        return _global(pick(choices, NAMES))
    if kind == 1:
        return _stack_global(pick(choices, NAMES))
    if kind == 2:
        return _unicode(pick(choices, STRINGS))
    return pick(choices, SNIPPETS)


def _changed_argument(op: bytes, choices: Choices) -> bytes:
    """The opcode `op` with another argument of its kind (or other bytes after its code)."""
    code = op[:1]
    if code in (b"X", b"\x8c"):  # a string
        return _unicode(pick(choices, STRINGS + NAMES))
    if code == b"c":
        return _global(pick(choices, NAMES))
    if code in (b"K", b"J", b"M", b"h", b"q", b"j", b"r"):  # ints and memo indices
        number = pick(choices, INTS) if choices.index(2) else choices.index(1 << 16)
        width = {b"K": 1, b"h": 1, b"q": 1, b"M": 2}.get(code, 4)
        return code + (number % (1 << (8 * width))).to_bytes(width, "little")
    return code + choices.blob(max(len(op) - 1, 8))


def mutate_storage(c: Checkpoint, choices: Choices) -> None:
    names = sorted(n for n in c.members if n.startswith("data/")) or ["data/0"]
    name = pick(choices, names)
    data = c.members.get(name, b"")
    action = choices.index(3)
    if action == 0:
        data = data[:choices.index(len(data) + 1)]
    elif action == 1:
        data = data + choices.blob(16)
    else:
        data = choices.blob(len(data) + 8)
    c.members[name] = data


def mutate_records(c: Checkpoint, choices: Choices) -> None:
    name = pick(choices, ["byteorder", "version", ".format_version", "data.pkl"])
    if name == "data.pkl" or choices.index(3) == 0:
        c.members.pop(name, None)
    else:
        c.members[name] = pick(choices, [b"little", b"big", b"", b"1", b"3", b"4", b"little\n", b"\xff" * 9])


def mutate_names(c: Checkpoint, choices: Choices) -> None:
    names = sorted(c.members)
    name = pick(choices, names) if names else "x"
    target = pick(choices, ["data/0", "data/1", "data/99", "code/x.py", "constants.pkl", "data.pkl", "../data.pkl",
                            "data/0/", name + "x"])
    if choices.index(2):
        c.members[target] = c.members.pop(name, b"")
    else:
        c.prefix = pick(choices, ["archive", "a/b", "", "archive2"])


MUTATIONS = [mutate_pickle, mutate_pickle, mutate_pickle, mutate_storage, mutate_records, mutate_names]
