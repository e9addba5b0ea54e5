"""Every op of the table on the narrow dtypes: its sample calls (op_samples.py) with the float32 arrays
made float16 / bfloat16, or the int64 ones uint8 / int8 / int16. The dtype rule predicts what the
kernel returns; a narrow float result is the float32 computation on the same values, rounded once
(as PyTorch's CPU kernels); the few calls PyTorch refuses for these dtypes are refused by name."""
import ml_dtypes
import numpy as np
import pytest

from tscript_runtime.errors import OpError
from tscript_runtime.ops import OPS
from tests.runtime.op_samples import SAMPLES
from tests.runtime.test_op_table import _full_args, _functional_ops, _meta

NARROW = {"float16": (np.float32, np.dtype(np.float16)), "bfloat16": (np.float32, np.dtype(ml_dtypes.bfloat16)),
          "uint8": (np.int64, np.dtype(np.uint8)), "int8": (np.int64, np.dtype(np.int8)),
          "int16": (np.int64, np.dtype(np.int16))}
# PyTorch refuses these too: complex parts must be float32/float64 (float16's complex32 is absent), and
# gather / scatter / index_select take int64 (or int32) indices, indexing also bool and uint8 masks.
REFUSED = {("aten::polar", "float"), ("aten::complex", "float"), ("aten::view_as_complex", "float"),
           *((f"aten::{n}", "int") for n in ("gather", "index", "index_put", "index_select", "scatter",
                                             "scatter_add"))}


def _convert(x, wide, narrow):
    if isinstance(x, np.ndarray) and x.dtype == wide:
        return x.astype(narrow)
    if isinstance(x, list):
        return [_convert(y, wide, narrow) for y in x]
    return x


def _calls(name: str, dtype_name: str):
    wide, narrow = NARROW[dtype_name]
    op = OPS[name]
    for args in SAMPLES.get(name, []):
        args = _full_args(op, args)
        converted = [_convert(a, wide, narrow) for a in args]
        if any(c is not a for c, a in zip(converted, args)):
            yield converted


def _run(op, args):
    return op.kernel(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])


def _outputs(out) -> list:
    return [np.asarray(o) for o in (out if isinstance(out, (tuple, list)) else (out,))]


@pytest.mark.parametrize("dtype_name", sorted(NARROW))
def test_rules_predict_the_kernels_on_narrow_dtypes(dtype_name):
    kind = "float" if NARROW[dtype_name][0] is np.float32 else "int"
    wrong, refused = [], set()
    for name in _functional_ops():
        op = OPS[name]
        for args in _calls(name, dtype_name):
            try:
                outs = _outputs(_run(op, args))
            except OpError:
                refused.add(name)
                continue
            rule = op.dtype(*[_meta(a) for a in args])
            rules = rule if isinstance(rule, tuple) else (rule,) * len(outs)
            wrong += [f"{name}: rule {r}, kernel {o.dtype}" for o, r in zip(outs, rules) if o.dtype != r]
    assert not wrong, "\n".join(wrong)
    assert refused == {n for n, k in REFUSED if k == kind}


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
def test_narrow_float_results_are_the_float32_results_rounded_once(dtype_name):
    narrow = NARROW[dtype_name][1]
    differ = []
    for name in _functional_ops():
        op = OPS[name]
        if (name, "float") in REFUSED:
            continue
        for args in _calls(name, dtype_name):
            wide = [_convert(a, narrow, np.float32) for a in args]      # the same (rounded) values in float32
            for got, want in zip(_outputs(_run(op, args)), _outputs(_run(op, wide))):
                with np.errstate(over="ignore"):  # (float32 values beyond float16's range round to inf)
                    want = want.astype(narrow)
                if got.dtype == narrow and not np.array_equal(got.astype(np.float32), want.astype(np.float32),
                                                              equal_nan=True):
                    differ.append(name)
    assert not differ, differ
