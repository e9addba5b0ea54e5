"""Check a pickle's opcodes before anything is unpickled (`scan`): the reader of PyTorch checkpoints
(torch_checkpoint.py) runs it first, so a hostile pickle is refused before a single object is built.

`pickletools.genops` decodes the opcodes without building anything; `scan` follows the stack they
would build, item by item, and refuses:

- opcodes a checkpoint never needs: INST and OBJ (protocol 0/1 instances), EXT1/2/4 (the copyreg
  extension registry, whose cache could hand out an object without naming its global), PERSID
  (text persistent ids), NEXT_BUFFER and READONLY_BUFFER (out-of-band data);
- memo indices beyond the number of opcodes so far (the C unpickler grows its memo array to the
  largest index it is given: one LONG_BINPUT could ask for gigabytes);
- a tuple that unfolds to more than MAX_TUPLE_ITEMS items counting shared sub-tuples each time they
  occur (tuples do not cache their hash: a 60-deep chain of pairs of one shared tuple takes 2**60
  steps to hash when it becomes a dict key or set member, and as long to compare);
- malformed streams (truncated, unknown opcodes, stack underflow, no STOP).

It returns the `module.name` of every GLOBAL opcode, so the caller can refuse a name before
unpickling (STACK_GLOBAL names come from the stack: the unpickler's `find_class` checks those).
"""
from __future__ import annotations

import pickletools

from tscript_runtime.errors import ModelError

MAX_TUPLE_ITEMS = 1 << 22
REFUSED = {"INST", "OBJ", "EXT1", "EXT2", "EXT4", "PERSID", "NEXT_BUFFER", "READONLY_BUFFER"}
_PUTS = {"PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE"}
_GETS = {"GET", "BINGET", "LONG_BINGET"}
_TUPLES = {"TUPLE", "TUPLE1", "TUPLE2", "TUPLE3"}
_DECODE_ERRORS = (ValueError, EOFError, OverflowError, IndexError)


def scan(data, where: str) -> list[str]:
    """The globals `data` names (GLOBAL opcodes, as "module.name"), after the checks of the module
    docstring; a ModelError naming `where` for a pickle that fails them."""
    stack = _Stack(where)
    names = []
    try:
        for count, (op, arg, _) in enumerate(pickletools.genops(bytes(data))):
            if op.name in REFUSED:
                raise ModelError(f"{where}: refusing the pickle opcode {op.name} (never needed by a checkpoint)")
            if op.name == "GLOBAL":
                names.append(arg.replace(" ", ".", 1))
            stack.step(op, arg, count)
    except _DECODE_ERRORS as e:
        raise ModelError(f"{where}: not a valid pickle ({e})") from None
    return names


class _Stack:
    """The stack and memo a pickle would build, each object reduced to its size as a tuple tree."""

    def __init__(self, where: str):
        self.where = where
        self.items: list[int] = []
        self.marks: list[int] = []
        self.memo: dict[int, int] = {}

    def step(self, op, arg, count: int) -> None:
        name = op.name
        if name in _PUTS:
            index = len(self.memo) if name == "MEMOIZE" else arg
            if not 0 <= index <= count:
                raise self.error(f"memo index {index} out of range")
            self.memo[index] = self.top()
        elif name in _GETS:
            if arg not in self.memo:
                raise self.error(f"memo index {arg} was never set")
            self.items.append(self.memo[arg])
        elif name == "DUP":
            self.items.append(self.top())
        elif name == "MARK":
            self.marks.append(len(self.items))
        elif name == "POP" and self.marks and self.marks[-1] == len(self.items):
            self.marks.pop()
        else:
            self._apply(op)

    def _apply(self, op) -> None:
        """Pop what `op` consumes, push what it makes: tuples weigh their items, all else 1."""
        before = op.stack_before
        popped = []
        if pickletools.markobject in before:
            if not self.marks:
                raise self.error(f"{op.name} without a MARK")
            start = self.marks.pop()
            popped, self.items[start:] = self.items[start:], []
            before = before[:before.index(pickletools.markobject)]
        popped += [self.pop() for _ in before]
        weight = 1 + sum(popped) if op.name in _TUPLES else 1
        if weight > MAX_TUPLE_ITEMS:
            raise ModelError(f"{self.where}: refusing a tuple of more than {MAX_TUPLE_ITEMS} items counting shared "
                             f"parts each time (MAX_TUPLE_ITEMS): it would take too long to hash")
        self.items.extend(weight for _ in op.stack_after)

    def top(self) -> int:
        if not self.items or (self.marks and self.marks[-1] == len(self.items)):
            raise self.error("stack underflow")
        return self.items[-1]

    def pop(self) -> int:
        value = self.top()
        self.items.pop()
        return value

    def error(self, problem: str) -> ModelError:
        return ModelError(f"{self.where}: not a valid pickle ({problem})")
