"""The op table is consistent: every op has a schema, a kernel, rules, and sample calls on which
the shape and dtype rules predict exactly what the kernel returns (on real arrays and on metas)."""
import numpy as np
import pytest

from tscript_runtime.ops import OPS, TensorMeta
from tests.runtime.op_samples import NOT_TENSOR_VALUED, SAMPLES


def _meta(x):
    if isinstance(x, np.ndarray):
        return TensorMeta(x.shape, x.dtype)
    if isinstance(x, list) and x and isinstance(x[0], np.ndarray):
        return [_meta(y) for y in x]
    return x


def _agrees(rule_shape, shape) -> bool:
    """A symbolic size in a rule's shape (data-dependent, e.g. how many mask elements are true)
    stands for any size."""
    return len(rule_shape) == len(shape) and all(isinstance(r, str) or r == k for r, k in zip(rule_shape, shape))


def _functional_ops():
    """Ops computing tensors (not in place; ops on Python numbers have no shape/dtype rules)."""
    return sorted(n for n, op in OPS.items() if op.mutates is None and n not in NOT_TENSOR_VALUED
                  and any("Tensor" in r.type for r in op.schema.returns))


def _full_args(op, args):
    return tuple(args) + op.defaults[len(args):]


def test_every_op_has_samples_and_rules():
    missing = [n for n in _functional_ops() if n not in SAMPLES]
    assert not missing, f"ops without sample calls in tests/runtime/op_samples.py: {missing}"
    no_rules = [n for n in _functional_ops() if OPS[n].shape is None or OPS[n].dtype is None]
    assert not no_rules, f"ops without shape/dtype rules: {no_rules}"


@pytest.mark.parametrize("name", [n for n in _functional_ops() if n in SAMPLES])
def test_rules_predict_kernel_output(name):
    op = OPS[name]
    for args in SAMPLES[name]:
        args = _full_args(op, args)
        out = op.kernel(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
        metas = [_meta(a) for a in args]
        shape, dtype = op.shape(*metas), op.dtype(*metas)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        shapes = shape if isinstance(out, (tuple, list)) else (shape,)
        dtypes = dtype if isinstance(dtype, tuple) else (dtype,) * len(outs)
        assert len(outs) == len(shapes), f"{name}{args}: rule gives {len(shapes)} outputs, kernel {len(outs)}"
        for o, s, d in zip(outs, shapes, dtypes):
            o = np.asarray(o)
            assert _agrees(s, o.shape), f"{name}: shape rule {s} != kernel {o.shape} for {args}"
            assert d == o.dtype, f"{name}: dtype rule {d} != kernel {o.dtype} for {args}"


def test_inplace_variants_point_at_their_functional_op():
    for name, op in OPS.items():
        functional = op.extra.get("functional")
        if functional:
            assert name == functional + "_" and OPS[functional].schema.args[1:] == op.schema.args[1:]


def test_schemas_print_and_reparse():
    from tscript_runtime.ops.schema import parse_schema
    for op in OPS.values():
        assert str(parse_schema(str(op.schema))) == str(op.schema)


def test_op_facts_and_the_emitters_tables_agree():
    """One row per op per table: every pointwise op has a scalar lowering and no other op has one;
    every row reduction has a row-kernel combine rule; every fact names an op."""
    from tscript_runtime.native.lowering import LOWERINGS
    from tscript_runtime.native.row import REDUCTIONS
    from tscript_runtime.ops.facts import FACTS
    assert set(LOWERINGS) == {name for name, op in OPS.items() if op.facts.pointwise}
    assert set(REDUCTIONS) == {name for name, op in OPS.items() if op.facts.row_reduction}
    assert set(FACTS) <= set(OPS)
