"""Whole-graph native execution: when the native plan has an entry (native_plan.py), one generated
function runs all of a graph's kernels, GEMMs, convolutions and poolings in order over one arena, so
a model call is one native call.

The entry's code is fixed; whatever depends on the input shapes is data it reads:

    void entry(i8** bases, i64* plan, double* scalars)

`bases` = [arena, tensor inputs..., fixed arrays (parameters, tensor constants)..., outputs...].
Every tensor value lives in a *root* buffer (views such as reshape share their input's root): a
root computed by a step is in the arena at byte offset `plan[slot]`, or in an output array when a
graph output is (a view of) it. `EntryLayout.build` lays out the plan's steps over the graph (which
slots each step reads; the emitter, native/entry.py, generates the code from it) and refuses steps
that do not match their nodes. `make_plan` fills the slots once per input signature: shapes by the
op table's rules, arena offsets, kernel sizes and strides (the kernels' own launch plans), GEMM
dimensions.

Inputs are read with their strides where the plan can take them (else as C-contiguous copies);
everything computed is C-contiguous. A signature the entry cannot serve (a batched matmul, mixed
dtypes, shapes that are an error) gets no plan: the caller runs the executor instead, which also
raises the error that names the node.

`prepare` (at load, for the shapes a saved model names) makes a plan and this thread's arena ahead
of a first run (its pages touched on a thread of their own while loading goes on; the thread's next
run waits for that), but no arena beyond MAX_PREPARED_ARENA (1 GiB): a larger one is made by the
first run that needs it, so a file cannot make loading take memory at its word.
"""
from __future__ import annotations

import copy
import ctypes
import math
import threading

import numpy as np

from .arena import ALIGN as ARENA_ALIGN
from .entry_layout import EntryLayout
from .entry_plan import OUT, Unplannable, make_plan
from .entry_steps import CONTAINERS
from .errors import OpError

# -- running ---------------------------------------------------------------------------------------------

# The entry returns 0, or 1 + the index of the step that found an index out of range (nothing after it ran).
_ENTRY = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_MAX_PLANS = 64
MAX_PREPARED_ARENA = 1 << 30


def _interface_pointer(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _struct_pointer(a: np.ndarray) -> int:
    """The data pointer read from the ndarray object itself (the `data` field after the object
    header, as numpy's C API lays it out): 6x cheaper than __array_interface__."""
    return _from_address(id(a) + 16).value


_from_address = ctypes.c_void_p.from_address
_probe = np.empty(3)
data_pointer = _struct_pointer if _struct_pointer(_probe) == _interface_pointer(_probe) else _interface_pointer
del _probe


def _aligned(nbytes: int) -> np.ndarray:
    """`nbytes` uninitialized bytes starting on a cache line (ARENA_ALIGN): the arena's buffers are
    aligned to it from its start, so that a kernel's vector loads and stores do not straddle lines (malloc
    aligns to 16 bytes only)."""
    raw = np.empty(nbytes + ARENA_ALIGN, np.uint8)
    skip = -data_pointer(raw) % ARENA_ALIGN
    return raw[skip:skip + nbytes]


class GraphEntry:
    """A graph's native entry point: `run(args)` takes the executor's inputs (the module's attribute
    tree first when the graph reads one) and returns the outputs, or None when this input signature
    is for the executor. Several threads may run it at once (each has its own arena).

    Parameters are read from the tree on every call by `reader(trie, n)(tree)`, which returns the
    list of fixed arrays (None at tensor constants) or None; the default reads nested mappings."""

    def __init__(self, layout: EntryLayout, address: int, launchers: dict, constants: dict, reader=None, owner=None):
        self.owner = owner  # the native library holding the code: alive as long as this runner
        self.layout = layout
        self.fn = _ENTRY(address)
        self.launchers = launchers
        n = len(layout.fixed)
        self._constants = [np.ascontiguousarray(constants[src[1]]) if src[0] == "constant" else None
                           for src, _ in layout.fixed]
        attrs = [(i, src[1]) for i, (src, _) in enumerate(layout.fixed) if src[0] == "attr"]
        self._read = (reader or TreeReader)(attribute_trie(attrs), n) if attrs else None
        self._none = [None] * n
        # module buffers the entry writes in place: a copy would take the writes, so those must be C-contiguous
        self._written = {k for k, (_, name) in enumerate(layout.fixed) if name in layout.written_fixed}
        self._fixed_base = 1 + len(layout.inputs)
        tensors = set(layout.inputs)
        module = bool(layout.graph["inputs"]) and layout.graph["inputs"][0].get("type", "").startswith("__module__")
        self._others = [i for i in range(len(layout.graph["inputs"])) if i not in tensors and not (module and i == 0)]
        self._n_bases = self._fixed_base + n + len(layout.outputs)
        self._structure = None  # graph outputs as trees of indices into the flat results, if not flat
        if layout.containers:
            flat = iter(range(len(layout.results)))
            self._structure = [_structure(layout, o, flat) for o in layout.graph["outputs"]]
        self._plans: dict = {}
        self._local = threading.local()

    def run(self, args: list):
        """The graph's outputs for `args`, or None (run the executor instead)."""
        found = self._plan_of(args)
        if found is None:
            return None
        plan, tensors, local, bases = found
        if local.touching is not None:  # (prepare's arena, its pages still being touched)
            local.touching.join()
            local.touching = None
        if local.arena.nbytes < plan.arena:
            self._grow_arena(local, bases, plan.arena)
        k = 1
        for a in tensors:
            bases[k] = data_pointer(a)
            k += 1
        k = self._n_bases - len(plan.outputs)
        outs = []
        for shape, dtype in plan.outputs:
            o = np.empty(shape, dtype)
            bases[k] = data_pointer(o)
            outs.append(o)
            k += 1
        for draw in plan.draws:
            draw.fill(local.arena, outs)
        if self.fn(local.address, plan.address, plan.scalars_address):
            return None  # an index out of range: the executor raises the op's own error
        if plan.direct:
            return outs
        sources = [outs, tensors, None]  # (the fixed arrays: gathered when an output is one of them)
        results = []
        for source, i, shape, strides, offset in plan.views:
            if sources[source] is None:
                sources[source] = self._fixed_arrays()
            a = sources[source][i]
            if source == OUT:
                results.append(a if a.shape == shape and offset == 0 and strides is None
                               else a.reshape(shape) if strides is None and offset == 0 and a.size == math.prod(shape)
                               else np.ndarray(shape, a.dtype, a, offset, strides))
            else:  # an input or parameter of any strides, or a view of one
                results.append(a if a.shape == shape and offset == 0 and (strides or a.strides) == a.strides
                               else np.asarray(_View(a, shape, strides, offset)))
        return results if self._structure is None else [_rebuild(s, results) for s in self._structure]

    def twin(self, address: int, owner) -> "GraphEntry":
        """A runner of other code built for the same layout (a timed build: native/step_clock.py) at
        `address` in `owner` (its library), reading the same inputs and parameters, with plans and
        thread state of its own."""
        other = copy.copy(self)
        other.fn, other.owner = _ENTRY(address), owner
        other._plans, other._local = {}, threading.local()
        return other

    def _fixed_arrays(self) -> list:
        """The fixed arrays of this thread's last call: tensor constants and parameters."""
        return [c if c is not None else a for c, a in zip(self._constants, self._local.kept)]

    def prepare(self, args: list) -> bool:
        """Make the plan for the signature of `args` now, and this thread's arena for it up to
        MAX_PREPARED_ARENA bytes (a first run then costs what later ones do: its pages are touched on
        another thread meanwhile, which this thread's next run waits for); False when that signature
        is for the executor."""
        found = self._plan_of(args)
        if found is not None and found[2].arena.nbytes < found[0].arena <= MAX_PREPARED_ARENA:
            local = found[2]
            if local.touching is not None:
                local.touching.join()
            self._grow_arena(local, found[3], found[0].arena, touch=False)
            local.touching = threading.Thread(target=local.arena.fill, args=(0,), name="tscript-arena", daemon=True)
            local.touching.start()  # (numpy fills without the GIL)
        return found is not None

    @staticmethod
    def _grow_arena(local, bases, nbytes: int, touch: bool = True) -> None:
        """This thread's arena, `nbytes` large, its pages touched unless not `touch` (a first run pays no
        page faults)."""
        local.arena = _aligned(nbytes)
        if touch:
            local.arena.fill(0)
        bases[0] = data_pointer(local.arena)

    def _plan_of(self, args: list):
        """(plan, tensor inputs, thread state, pointer array), or None. Kernels read inputs of any
        strides; a signature whose plan cannot take them as they are runs on C-contiguous copies."""
        tensors = []
        strided = False
        for i in self.layout.inputs:
            a = args[i]
            if a.__class__ is not np.ndarray:
                return None
            strided = strided or not a.flags.c_contiguous
            tensors.append(a)
        local = self._local
        try:
            bases, held = local.bases, local.held
        except AttributeError:
            bases, held = self._thread_state()
        fixed = self._read(args[0]) if self._read is not None else self._none
        if fixed is None:
            return None
        if fixed is not held:
            for a, b in zip(fixed, held):
                if a is not b:
                    if not self._hold(fixed, bases):
                        return None
                    break
        try:
            plan = self._plan_for(args, tensors, strided)
            if plan is None and strided:
                tensors = [a if a.flags.c_contiguous else np.ascontiguousarray(a) for a in tensors]
                plan = self._plan_for(args, tensors, False)
        except TypeError:  # an unhashable scalar input
            return None
        if plan is None:
            return None
        return plan, tensors, local, bases

    def _plan_for(self, args: list, tensors: list, strided: bool):
        """The plan of this signature (input strides count when `strided`), made the first time."""
        shapes = tuple([(a.shape, a.strides, a.dtype.num) if strided else (a.shape, a.dtype.num) for a in tensors])
        key = (shapes, self._local.fixed_key, tuple([args[i] for i in self._others]) if self._others else ())
        try:
            return self._plans[key]
        except KeyError:
            return self._new_plan(key, args, tensors)

    def _thread_state(self) -> tuple:
        """This thread's pointer array (tensor constants filled in) and arena."""
        local = self._local
        local.bases = (ctypes.c_void_p * self._n_bases)()
        local.address = ctypes.addressof(local.bases)
        local.arena = _aligned(1 << 16)
        local.bases[0] = data_pointer(local.arena)
        for k, a in enumerate(self._constants):
            if a is not None:
                local.bases[self._fixed_base + k] = data_pointer(a)
        local.held, local.kept, local.fixed_key = self._none, self._none, ()
        local.touching = None  # a thread touching the pages of the arena prepare() made
        return local.bases, local.held

    def _hold(self, fixed: list, bases) -> bool:
        """Use new parameter arrays: write their pointers (C-contiguous copies of those that are not)
        and keep them referenced, so their addresses stay theirs. False if one is not an array."""
        kept = []
        for k, a in enumerate(fixed):
            if a is not None:
                if a.__class__ is not np.ndarray or (k in self._written and not a.flags.c_contiguous):
                    return False
                a = a if a.flags.c_contiguous else np.ascontiguousarray(a)
                bases[self._fixed_base + k] = data_pointer(a)
            kept.append(a)
        local = self._local
        local.held, local.kept = fixed, kept
        local.fixed_key = tuple([(a.shape, a.dtype.num) for a in kept if a is not None])
        return True

    def _new_plan(self, key: tuple, args: list, tensors: list):
        graph_args = list(args)
        for i, a in zip(self.layout.inputs, tensors):
            graph_args[i] = a
        fixed = [c if c is not None else a for c, a in zip(self._constants, self._local.kept)]
        try:
            plan = make_plan(self.layout, self.launchers, graph_args, fixed)
        except (Unplannable, OpError, TypeError, ValueError, IndexError):
            plan = None  # the executor runs it (and raises the error that names the node)
        if len(self._plans) >= _MAX_PLANS:
            self._plans.clear()
        self._plans[key] = plan
        return plan


class _View:
    """A view of array `base` (any strides) with `shape` and byte `strides` (None: C-contiguous) from
    `offset` bytes past its start: numpy keeps this object, and so `base`, alive."""

    def __init__(self, base: np.ndarray, shape: tuple, strides, offset: int):
        self.base = base
        self.__array_interface__ = {"version": 3, "shape": tuple(shape), "strides": strides, "typestr": base.dtype.str,
                                    "data": (data_pointer(base) + offset, not base.flags.writeable)}


def _structure(layout: EntryLayout, name: str, flat):
    if name in layout.containers:
        kind, items = layout.containers[name]
        return CONTAINERS[kind], [_structure(layout, item, flat) for item in items]
    return next(flat)


def _rebuild(structure, results: list):
    if isinstance(structure, int):
        return results[structure]
    kind, items = structure
    return kind(_rebuild(s, results) for s in items)


def attribute_trie(attrs: list) -> tuple:
    """[(fixed index, attribute chain)] as a trie of (name, fixed index or None, children), so a
    shared prefix (a submodule) is looked up once per call."""
    root: dict = {}
    for index, chain in attrs:
        node = root
        for name in chain[:-1]:
            node = node.setdefault(name, [None, {}])[1]
        node.setdefault(chain[-1], [None, {}])[0] = index

    def freeze(level: dict) -> tuple:
        return tuple((name, index, freeze(children)) for name, (index, children) in level.items())
    return freeze(root)


class TreeReader:
    """Reads the parameters from an attribute tree of nested mappings (a saved model's). A tree with a
    `version` (model.AttributeTree, which counts its arrays replaced) is read again only when that
    changed: the last list is returned as it is (the entry then sees no new array to hold)."""

    def __init__(self, trie: tuple, n: int):
        self.trie, self.n = trie, n
        self._last = (None, None, None)  # (tree, its version, its arrays)

    def __call__(self, tree) -> list | None:
        version = getattr(tree, "version", None)
        last_tree, last_version, last = self._last
        if version is not None and tree is last_tree and version == last_version:
            return last
        fixed = [None] * self.n
        if not _read(tree, self.trie, fixed):
            return None
        if version is not None:
            self._last = (tree, version, fixed)
        return fixed


def _read(obj, trie: tuple, fixed: list) -> bool:
    for name, index, children in trie:
        x = obj[name]
        if index is not None:
            if x.__class__ is not np.ndarray:
                return False
            fixed[index] = x
        if children and not _read(x, children, fixed):
            return False
    return True
