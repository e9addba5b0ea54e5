"""The conformance corpus (programs.py): every program gives the same result scripted as eager,
and its graphs pass the IR verifier, before and after inlining."""
import pytest

import tscript as ts
from tscript.ir.verify import verify
from tests.script.helpers import assert_same, clone
from tests.script.programs import FUNCTIONS, MODULES


def _check_graphs(scripted) -> None:
    verify(scripted.graph)
    verify(scripted.inlined_graph)
    assert not any(n.kind in ("prim::CallFunction", "prim::CallMethod") for n in scripted.inlined_graph.all_nodes())


@pytest.mark.parametrize("name, fn, args", FUNCTIONS, ids=[c[0] for c in FUNCTIONS])
def test_function(name, fn, args):
    expected = fn(*clone(args))
    scripted = ts.jit.script(fn)
    assert_same(scripted(*clone(args)), expected)
    _check_graphs(scripted)


@pytest.mark.parametrize("name, factory, args", MODULES, ids=[c[0] for c in MODULES])
def test_module(name, factory, args):
    ts.manual_seed(0)
    eager = factory()
    ts.manual_seed(0)
    scripted = ts.jit.script(factory())
    assert_same(scripted(*clone(args)), eager(*clone(args)))
    with ts.no_grad():  # the array domain (no autograd) as well as the tensor domain above
        assert_same(scripted(*clone(args)), eager(*clone(args)))
    _check_graphs(scripted)


def test_corpus_size():
    """The issue asks for at least 80 programs (functions and modules)."""
    programs = {id(fn) for _, fn, _ in FUNCTIONS} | {name for name, _, _ in MODULES}
    assert len(FUNCTIONS) + len(MODULES) >= 80
    assert len(programs) >= 80
