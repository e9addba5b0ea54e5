"""The ONE dispatch path: every tensor operation, method or operator, runs through `dispatch`.

It binds arguments to the op's schema, unwraps tensors to numpy arrays, runs the op library's
kernel and wraps the result (views share their base's version counter). Errors from numpy are
turned into PyTorch-style messages by re-checking the arguments with the op's schema and rules,
which costs nothing on the fast path.
"""
import numpy as np

from tscript_runtime.errors import OpError, OpIndexError, OpRuntimeError, OpTypeError, OpValueError
from tscript_runtime.meta import computes_tensor, meta_call
from tscript_runtime.ops import OPS, OpDef
from tscript_runtime.ops.narrow import NARROW_CHARS
from tscript_runtime.ops.registry import TensorMeta

from ._tensor import Tensor, _make
from ._tracing import state as _trace_state
from .autograd.grad_mode import state as _grad_state
from .autograd.record import run_recorded

_NUMBERS = (int, float, bool, complex)
_ndarray = np.ndarray
_CLEAN = ((IndexError, OpIndexError), (TypeError, OpTypeError), (ValueError, OpValueError))


def _meta_kernel(op: OpDef):
    return lambda *arrays: meta_call(op, list(arrays))


def _is_tensor(x) -> bool:
    return isinstance(x, Tensor)


def dispatch(op: OpDef, args: tuple, kwargs: dict | None = None):
    """Run `op` on tscript values; returns Tensor(s) or Python values per the op's schema.
    `args` are positional; a tuple of every argument in schema order (as graphs hold them) also works."""
    if kwargs or not (op.n_required <= len(args) <= op.n_positional or len(args) == len(op.defaults)):
        args = op.schema.bind(args, kwargs, _is_tensor)
    elif len(args) < len(op.defaults):
        args = args + op.defaults[len(args):]
    arrays = list(args)
    needs_grad = False
    kernel = op.direct if not op.list_pos else op.kernel  # (lists: the kernel checks them for narrow floats)
    for i in op.tensor_pos:
        a = args[i]
        if isinstance(a, Tensor):
            arr = arrays[i] = a._data
            needs_grad = needs_grad or a._requires_grad
            if arr.dtype.char in NARROW_CHARS:  # float16, bfloat16: the kernel that computes in float32
                kernel = op.kernel
        elif a is not None and (a.__class__ not in _NUMBERS or op.schema.args[i].base_type == "Tensor"):
            op.schema.check_types(args, _is_tensor)  # raises the TypeError naming the argument
            arrays[i] = _plain_number(a)
    for i in op.list_pos:
        arrays[i] = _unwrap_list(op, args, i)
        needs_grad = needs_grad or any(t is not None and t._requires_grad for t in args[i])
    if _trace_state.dataless and computes_tensor(op):
        kernel = _meta_kernel(op)
    if needs_grad and _grad_state.enabled:
        result = run_recorded(op, args, arrays, lambda arr: _run(op, kernel, args, arr),
                              lambda out: _wrap(op, out, args, arrays))
    else:
        result = _wrap(op, _run(op, kernel, args, arrays), args, arrays)
    if _trace_state.recorder is not None:
        return _trace_state.recorder.record(op, args, result)
    return result


def _plain_number(x):
    """A number of an int/float subclass (a traced size) as a plain one: numpy would promote the
    subclass as a strong float64/int64 instead of a weak Python scalar."""
    if isinstance(x, int) and not isinstance(x, bool):
        return int(x)
    return float(x) if isinstance(x, float) else x


def _run(op: OpDef, kernel, args, arrays):
    """The kernel's result; numpy's complaints become clear errors (our own bugs propagate)."""
    try:
        return kernel(*arrays)
    except OpError:
        raise
    except (ValueError, TypeError, IndexError, ArithmeticError) as e:
        raise _explain(op, args, arrays, e) from e


def _unwrap_list(op: OpDef, args, i: int) -> list:
    items = args[i]
    if not isinstance(items, (list, tuple)):
        op.schema.check_types(args, _is_tensor)
    out = []
    for t in items:
        if isinstance(t, Tensor):
            out.append(t._data)
        elif t is None and op.schema.args[i].type.startswith("Tensor?"):
            out.append(None)
        else:
            op.schema.check_types(args, _is_tensor)
    return out


def _wrap(op: OpDef, out, args, arrays):
    if op.out_alias is not None:
        return _wrap_alias(op, out, args[op.out_alias], arrays[op.out_alias])
    if out.__class__ is _ndarray:
        return _make(out)
    if isinstance(out, tuple):
        t = tuple(_wrap_value(x) for x in out)
        names = op.extra.get("namedtuple")
        return names(*t) if names else t
    if isinstance(out, list):
        return [_wrap_value(x) for x in out]
    return _wrap_value(out)


def _wrap_value(x):
    if x.__class__ is _ndarray:
        return _make(x)
    if isinstance(x, np.generic):
        return _make(np.asarray(x))
    return x


def _wrap_alias(op: OpDef, out, src: Tensor, src_array):
    """Outputs of view ops share memory and the version counter with their input; in-place ops
    return their input itself, one version newer."""
    if out is src_array:
        if op.mutates is not None:
            src._vc[0] += 1
        return src
    if isinstance(out, (list, tuple)):
        return tuple(_view_of(src, x) for x in out)
    return _view_of(src, out)


def _view_of(src: Tensor, arr) -> Tensor:
    # e.g. reshape had to copy; an empty view shares no bytes but is still a view
    if arr.size and not np.may_share_memory(arr, src._data):
        return _make(arr)
    t = _make(arr)
    t._vc = src._vc
    t._base = src if src._base is None else src._base
    return t


def _meta(x):
    return TensorMeta(x.shape, x.dtype) if x.__class__ is _ndarray else x


def _explain(op: OpDef, args, arrays, error: Exception) -> Exception:
    """A clear error for a kernel failure: the schema, shape and dtype rules say what is wrong
    (raising their own message); otherwise name the op and numpy's complaint."""
    op.schema.check_types(args, _is_tensor)
    metas = [([_meta(y) for y in x] if isinstance(x, list) else _meta(x)) for x in arrays]
    try:
        if op.dtype is not None:
            op.dtype(*metas)
        if op.shape is not None:
            op.shape(*metas)
    except OpError as clean:
        return clean
    msg = f"{op.schema.short_name}(): {error}"
    for builtin, clean in _CLEAN:
        if isinstance(error, builtin):
            return clean(msg)
    return OpRuntimeError(msg)


def op(name: str) -> OpDef:
    """The OpDef for `name`, e.g. op("aten::add")."""
    return OPS[name]
