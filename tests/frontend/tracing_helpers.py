"""Shared by the tracing tests: compare a traced function with eager on several inputs."""
import tscript as ts
from tests.conftest import assert_close


def clone(x):
    """Inputs copied (nested containers too), so in-place functions see the same values twice."""
    if isinstance(x, ts.Tensor):
        return x.detach().clone().requires_grad_(x.requires_grad)
    if isinstance(x, (list, tuple)):
        return type(x)(clone(v) for v in x)
    if isinstance(x, dict):
        return {k: clone(v) for k, v in x.items()}
    return x


def assert_same(got, expected, rtol=1e-5, atol=1e-6):
    """Same nesting (tuple/list/dict, keys), same tensors (values, shape, dtype), same numbers.
    Named tuples (max(dim)'s return type) compare as plain tuples, as a PyTorch trace returns."""
    if isinstance(expected, ts.Tensor):
        assert isinstance(got, ts.Tensor), f"expected a Tensor, got {type(got).__name__}"
        assert_close(got, expected, rtol=rtol, atol=atol)
    elif isinstance(expected, dict):
        assert isinstance(got, dict) and list(got) == list(expected)
        for k in expected:
            assert_same(got[k], expected[k], rtol, atol)
    elif isinstance(expected, (tuple, list)):
        assert isinstance(got, tuple if isinstance(expected, tuple) else list), type(got)
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert_same(g, e, rtol, atol)
    else:
        assert got == expected and type(got) is type(expected), (got, expected)


def trace_matches_eager(fn, example, *others, rtol=1e-5, atol=1e-6, **trace_kwargs):
    """Trace `fn` on `example` (a tuple of arguments), then check that the trace equals eager on the
    example and on every other argument tuple in `others`; returns the trace."""
    traced = ts.jit.trace(fn, clone(example), **trace_kwargs)
    for args in (example, *others):
        with ts.no_grad():
            assert_same(traced(*clone(args)), fn(*clone(args)), rtol, atol)
    return traced


def kinds(graph) -> list:
    """Node kinds of a graph, nested blocks included, in order."""
    return [n.kind for n in graph.all_nodes()]


def constant_values(graph) -> list:
    """The Python values of the graph's prim::Constant nodes (tensor constants as arrays)."""
    out = []
    for n in graph.all_nodes():
        if n.kind == "prim::Constant" and "value" in n.attrs:
            v = n.attrs["value"]
            out.append(graph.constants[v.name] if type(v).__name__ == "TensorRef" else v)
    return out
