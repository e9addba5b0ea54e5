"""Scopes of the SSA lowering: one `Env` per block being emitted (function body, branch of an `if`,
loop body), mapping variable names to what they hold at the current point.

Control flow that leaves a block early is tracked with flag variables living in the same maps,
so they merge at joins like any variable: `$returned` / `$ret` (a `return` ran, and its value),
`$broke`, `$continued` (inside loops) and `$raised` (the block ends in an exception). A flag that
is a constant True means the rest of the block is dead; a flag that is an IR value means it may
be set, so the compiler guards what follows with `if not flag`."""
from __future__ import annotations

from .values import ConstValue, SimpleValue, Sugared

RETURNED, RET, BROKE, CONTINUED, RAISED = "$returned", "$ret", "$broke", "$continued", "$raised"
BOUND = "$bound."  # + a name: has a loop assigned the variable it defines (see MaybeUnbound)
EXITS = (RETURNED, BROKE, CONTINUED)
FALSE, TRUE = ConstValue(False), ConstValue(True)


class Env:
    """Variables of one block; lookups fall back to the enclosing blocks."""

    def __init__(self, parent: "Env | None", block):
        self.parent = parent
        self.block = block
        self.vars: dict[str, Sugared] = {}      # names (re)bound in this block
        self.refined: dict[str, Sugared] = {}   # narrowed views of outer values (`x is not None`)

    def lookup(self, name: str) -> Sugared | None:
        env = self
        while env is not None:
            if name in env.refined:
                return env.refined[name]
            if name in env.vars:
                return env.vars[name]
            env = env.parent
        return None

    def set(self, name: str, value: Sugared) -> None:
        """Bind `name` here (replacing any narrowed view of it)."""
        self.refined.pop(name, None)
        self.vars[name] = value

    def flag(self, name: str) -> Sugared:
        """An exit flag: FALSE unless set."""
        value = self.lookup(name)
        return FALSE if value is None else value

    def is_set(self, name: str) -> bool:
        """Is the flag certainly set?"""
        value = self.flag(name)
        return isinstance(value, ConstValue) and value.value is True

    @property
    def dead(self) -> bool:
        """The block ends in an exception: nothing after this point runs."""
        return self.is_set(RAISED)

    @property
    def terminated(self) -> bool:
        """A return, break, continue or raise has certainly run: the rest of the block is dead."""
        return self.dead or any(self.is_set(f) for f in EXITS)

    @property
    def returned(self) -> bool:
        """A return (or raise) has certainly run."""
        return self.dead or self.is_set(RETURNED)

    def pending(self) -> list:
        """Exit flags that may or may not be set here (IR values)."""
        return [f for f in EXITS if isinstance(self.flag(f), SimpleValue)]
