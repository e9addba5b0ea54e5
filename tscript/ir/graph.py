"""The SSA IR: a `Graph` owns a top-level `Block`; a `Block` has parameters, a doubly linked list of
`Node`s and returns; a `Node` has a kind (`aten::add`), input and output `Value`s, attributes and
nested blocks (`prim::If`: two, `prim::Loop`: one). Every `Value` knows its uses, so
replace-all-uses and dead-code removal cost O(uses), and nodes insert/remove in O(1).
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Iterator

from .types import TENSOR, Type, type_of_value


class Use:
    """Input slot `index` of `node` reads a value; `pos` is the use's place in the value's `uses`
    (so removing a use is O(1), whatever the number of readers)."""
    __slots__ = ("node", "index", "pos")

    def __init__(self, node: "Node", index: int, pos: int = -1):
        self.node, self.index, self.pos = node, index, pos

    def __repr__(self) -> str:
        return f"Use({self.node.kind}, {self.index})"


class Value:
    """An SSA value: an output of `node` (or a parameter of `block`), read by `uses`."""
    __slots__ = ("graph", "name", "type", "node", "block", "uses")

    def __init__(self, graph: "Graph", type: Type, node: "Node | None" = None, block: "Block | None" = None,
                 name: str | None = None):
        self.graph = graph
        self.type = type                  #: the value's IR type
        self.node = node                  #: producing node, or None for a block parameter
        self.block = block                #: the block whose parameter this is (None for node outputs)
        self.uses: list[Use] = []         #: every input slot that reads this value
        self.name = graph.unique_name(name)  #: unique printed name (without the %)

    def replace_all_uses_with(self, other: "Value") -> None:
        """Make every reader of this value read `other` instead (O(uses))."""
        if other is self:
            return
        uses, self.uses = self.uses, []
        for use in uses:
            use.node.inputs[use.index] = other
            _attach(other, use)

    def rename(self, hint: str | None) -> None:
        self.graph.release_name(self.name)
        self.name = self.graph.unique_name(hint)

    @property
    def debug_name(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"%{self.name} : {self.type}"


def _attach(value: Value, use: Use) -> None:
    use.pos = len(value.uses)
    value.uses.append(use)


def _detach(value: Value, use: Use) -> None:
    """Remove `use` from `value.uses` in O(1): the last use takes its place."""
    uses = value.uses
    if not (0 <= use.pos < len(uses) and uses[use.pos] is use):  # the list was edited by hand
        value.uses = uses = [u for u in uses if u is not use]
        for i, u in enumerate(uses):
            u.pos = i
        return
    last = uses.pop()
    if last is not use:
        uses[use.pos] = last
        last.pos = use.pos


class Node:
    """One operation. `attrs` hold compile-time attributes (prim::Constant's value, GetAttr's name...)."""

    def __init__(self, graph: "Graph", kind: str, inputs=(), n_outputs: int = 0, attrs: dict | None = None):
        self.graph = graph
        self.kind = kind                  #: namespaced op name, e.g. "aten::add", "prim::If"
        self.inputs: list[Value] = []     #: values read, in schema order
        self._in_uses: list[Use] = []     # the Use of each input slot (same order as `inputs`)
        self.outputs: list[Value] = []    #: values defined
        self.attrs: dict = dict(attrs or {})  #: attributes printed in [...]
        self.blocks: list[Block] = []     #: nested blocks (If: then/else, Loop: body)
        self.owner: Block | None = None   #: the block holding this node
        self.prev: Node | None = None
        self.next: Node | None = None
        self.scope: str = ""              #: module path the node was recorded in (tracing)
        self.source: str | None = None    #: "file:line" of the user code that produced it
        for v in inputs:
            self.add_input(v)
        for _ in range(n_outputs):
            self.add_output()

    # -- inputs and outputs ---------------------------------------------------------------------------
    def add_input(self, value: Value) -> None:
        assert isinstance(value, Value), f"node input must be a Value, got {value!r}"
        use = Use(self, len(self.inputs))
        self._in_uses.append(use)
        self.inputs.append(value)
        _attach(value, use)

    def set_input(self, index: int, value: Value) -> None:
        use = self._in_uses[index]
        _detach(self.inputs[index], use)
        self.inputs[index] = value
        _attach(value, use)

    def remove_input(self, index: int) -> None:
        _detach(self.inputs.pop(index), self._in_uses.pop(index))
        for use in self._in_uses[index:]:  # later slots shift down by one
            use.index -= 1

    def drop_inputs(self) -> None:
        for v, use in zip(self.inputs, self._in_uses):
            _detach(v, use)
        self.inputs, self._in_uses = [], []

    def add_output(self, type: Type = TENSOR, name: str | None = None) -> Value:
        v = Value(self.graph, type, node=self, name=name)
        self.outputs.append(v)
        return v

    def remove_output(self, index: int) -> None:
        assert not self.outputs[index].uses, "removing an output that is still used"
        self.graph.release_name(self.outputs.pop(index).name)

    @property
    def output(self) -> Value:
        assert len(self.outputs) == 1, f"{self.kind} has {len(self.outputs)} outputs"
        return self.outputs[0]

    def add_block(self) -> "Block":
        b = Block(self.graph, owner=self)
        self.blocks.append(b)
        return b

    # -- placement --------------------------------------------------------------------------------------
    def insert_before(self, other: "Node") -> "Node":
        other.owner._link(self, other.prev, other)
        return self

    def insert_after(self, other: "Node") -> "Node":
        other.owner._link(self, other, other.next)
        return self

    def move_before(self, other: "Node") -> None:
        self.owner._unlink(self)
        self.insert_before(other)

    def destroy(self) -> None:
        """Remove this node (its outputs must be unused) and everything nested in it."""
        for out in self.outputs:
            assert not out.uses, f"destroying {self.kind} whose output %{out.name} is still used"
        for b in self.blocks:
            b.clear()
        self.drop_inputs()
        for out in self.outputs:
            self.graph.release_name(out.name)
        if self.owner is not None:
            self.owner._unlink(self)

    def is_before(self, other: "Node") -> bool:
        """In the same block, does this node come first? O(distance)."""
        n = self.next
        while n is not None:
            if n is other:
                return True
            n = n.next
        return False

    def __repr__(self) -> str:
        return f"<Node {self.kind} -> {[o.name for o in self.outputs]}>"


class Block:
    """A list of nodes with parameters (block inputs) and returns (block outputs)."""

    def __init__(self, graph: "Graph", owner: Node | None = None):
        self.graph = graph
        self.owner = owner                #: the node this block belongs to (None: the graph's top block)
        self.params: list[Value] = []     #: block inputs
        self.returns: list[Value] = []    #: block outputs (the `return (...)` / `-> (...)` list)
        self._return_uses = Node(graph, "prim::Return")  # holds the uses of `returns`
        self._return_uses.owner = self
        self.first: Node | None = None
        self.last: Node | None = None

    def add_param(self, type: Type = TENSOR, name: str | None = None) -> Value:
        v = Value(self.graph, type, block=self, name=name)
        self.params.append(v)
        return v

    def remove_param(self, index: int) -> None:
        assert not self.params[index].uses, "removing a block parameter that is still used"
        self.graph.release_name(self.params.pop(index).name)

    def add_return(self, value: Value) -> None:
        self._return_uses.add_input(value)
        self.returns = self._return_uses.inputs

    def set_return(self, index: int, value: Value) -> None:
        self._return_uses.set_input(index, value)

    def remove_return(self, index: int) -> None:
        self._return_uses.remove_input(index)
        self.returns = self._return_uses.inputs

    @property
    def return_node(self) -> Node:
        """The pseudo-node whose inputs are this block's returns (so returns count as uses)."""
        return self._return_uses

    @property
    def nodes(self) -> Iterator[Node]:
        n = self.first
        while n is not None:
            nxt = n.next
            yield n
            n = nxt

    def reversed_nodes(self) -> Iterator[Node]:
        n = self.last
        while n is not None:
            prv = n.prev
            yield n
            n = prv

    def append(self, node: Node) -> Node:
        self._link(node, self.last, None)
        return node

    def prepend(self, node: Node) -> Node:
        self._link(node, None, self.first)
        return node

    def _link(self, node: Node, prev: Node | None, nxt: Node | None) -> None:
        assert node.owner is None, "node is already in a block"
        node.owner, node.prev, node.next = self, prev, nxt
        if prev is None:
            self.first = node
        else:
            prev.next = node
        if nxt is None:
            self.last = node
        else:
            nxt.prev = node

    def _unlink(self, node: Node) -> None:
        if node.prev is None:
            self.first = node.next
        else:
            node.prev.next = node.next
        if node.next is None:
            self.last = node.prev
        else:
            node.next.prev = node.prev
        node.prev = node.next = node.owner = None

    def clear(self) -> None:
        """Destroy every node (last first, so uses disappear before definitions)."""
        self._return_uses.drop_inputs()
        self.returns = self._return_uses.inputs
        for n in list(self.reversed_nodes()):
            for out in n.outputs:
                for use in list(out.uses):
                    use.node.drop_inputs()
            n.destroy()


_NAME_SUFFIX = re.compile(r"^(.*)\.(\d+)$")


class Graph:
    """A function in SSA form: `inputs` are the top block's params, `outputs` its returns."""

    def __init__(self):
        self._names: set[str] = set()
        self._counter = 0
        self._next_suffix: dict[str, int] = {}
        self.block = Block(self)          #: the top-level block
        self._insert: tuple[Block, Node | None] = (self.block, None)
        self.constants: dict = {}         #: tensor constants by name (`prim::Constant[value=<Tensor c0>]`)

    # -- names ------------------------------------------------------------------------------------------
    def unique_name(self, hint: str | None) -> str:
        """`hint` if free, else `hint.1`, `hint.2`, ...; a fresh number when no hint is given."""
        if hint is None:
            while str(self._counter) in self._names:
                self._counter += 1
            name = str(self._counter)
            self._counter += 1
        elif hint not in self._names:
            name = hint
        else:
            m = _NAME_SUFFIX.match(hint)
            base = m.group(1) if m and not hint.isdigit() else hint
            k = self._next_suffix.get(base, 1)
            while f"{base}.{k}" in self._names:
                k += 1
            self._next_suffix[base] = k + 1
            name = f"{base}.{k}"
        self._names.add(name)
        return name

    def release_name(self, name: str) -> None:
        self._names.discard(name)

    # -- structure --------------------------------------------------------------------------------------
    @property
    def inputs(self) -> list[Value]:
        return self.block.params

    @property
    def outputs(self) -> list[Value]:
        return self.block.returns

    def add_input(self, type: Type = TENSOR, name: str | None = None) -> Value:
        return self.block.add_param(type, name)

    def add_output(self, value: Value) -> None:
        self.block.add_return(value)

    @property
    def nodes(self) -> Iterator[Node]:
        return self.block.nodes

    def all_nodes(self) -> Iterator[Node]:
        """Every node, nested blocks included (pre-order)."""
        stack = [self.block]
        while stack:
            block = stack.pop()
            for n in block.nodes:
                yield n
                stack.extend(reversed(n.blocks))

    # -- building ---------------------------------------------------------------------------------------
    def create(self, kind: str, inputs=(), n_outputs: int = 1, attrs: dict | None = None,
               types=None, names=None) -> Node:
        """A new node (not yet placed in a block)."""
        node = Node(self, kind, inputs, 0, attrs)
        types = types or [TENSOR] * n_outputs
        names = names or [None] * n_outputs
        for t, nm in zip(types, names):
            node.add_output(t, nm)
        return node

    def insert(self, kind: str, inputs=(), n_outputs: int = 1, attrs: dict | None = None, types=None,
               names=None) -> Node:
        """Create a node at the insertion point (end of the top block unless `inserting_before`)."""
        node = self.create(kind, inputs, n_outputs, attrs, types, names)
        block, before = self._insert
        if before is None:
            block.append(node)
        else:
            node.insert_before(before)
        return node

    def constant(self, value, name: str | None = None) -> Value:
        """A prim::Constant node for a Python value, at the insertion point."""
        attrs = {} if value is None else {"value": value}
        return self.insert("prim::Constant", (), 1, attrs, [type_of_value(value)], [name]).output

    @contextmanager
    def inserting_before(self, node: Node):
        """New nodes go right before `node` inside the `with`."""
        saved = self._insert
        self._insert = (node.owner, node)
        try:
            yield
        finally:
            self._insert = saved

    @contextmanager
    def inserting_at_end(self, block: Block):
        """New nodes go at the end of `block` inside the `with`."""
        saved = self._insert
        self._insert = (block, None)
        try:
            yield
        finally:
            self._insert = saved

    def copy(self) -> "Graph":
        """A deep copy (same value names)."""
        new = Graph()
        new.constants = dict(self.constants)
        value_map: dict[Value, Value] = {}
        for p in self.inputs:
            value_map[p] = new.add_input(p.type, p.name)
        clone_block_into(self.block, new.block, value_map)
        for r in self.outputs:
            new.add_output(value_map[r])
        return new

    def __str__(self) -> str:
        from .printer import print_graph
        return print_graph(self)

    def __repr__(self) -> str:
        return str(self)


def clone_node(node: Node, block: Block, value_map: dict) -> Node:
    """Copy `node` (and its nested blocks) to the end of `block`, reading inputs through `value_map`."""
    g = block.graph
    new = Node(g, node.kind, [value_map.get(v, v) for v in node.inputs], 0, node.attrs)
    new.scope, new.source = node.scope, node.source
    if hasattr(node, "callee"):
        new.callee = node.callee
    for out in node.outputs:
        value_map[out] = new.add_output(out.type, out.name)
    for b in node.blocks:
        nb = new.add_block()
        for p in b.params:
            value_map[p] = nb.add_param(p.type, p.name)
        clone_block_into(b, nb, value_map)
        for r in b.returns:
            nb.add_return(value_map.get(r, r))
    block.append(new)
    return new


def clone_block_into(src: Block, dst: Block, value_map: dict) -> None:
    """Append copies of `src`'s nodes to `dst`."""
    for n in src.nodes:
        clone_node(n, dst, value_map)
