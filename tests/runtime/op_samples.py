"""Sample calls for every op in the table: positional arguments in schema order (omitted trailing
arguments take their defaults). Used to check that each op's shape and dtype rules predict what its
kernel returns, so a new op without samples (or with a rule that disagrees) fails the suite."""
import numpy as np

from tscript_runtime.ops.sampling import UPSAMPLE_OPS, interpolates

F = np.arange(12, dtype=np.float32).reshape(3, 4) / 7 + 0.1
D = F.astype(np.float64)
I = np.arange(12, dtype=np.int64).reshape(3, 4)
I32 = I.astype(np.int32)
B = F > 0.8
ROW = np.linspace(0.5, 2, 4, dtype=np.float32)
F3 = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 5

_BINARY = [(F, ROW), (I, 2), (I32, F), (2.5, I), (F, D[0])]
_UNARY = [(F,), (D,), (I,)]

SAMPLES = {
    **{f"aten::{n}": _BINARY for n in ("add", "mul", "maximum", "minimum", "floor_divide")},
    "aten::remainder": [(F, ROW), (I, 3), (F * 3, 0.7)],  # away from its jumps, for gradcheck
    "aten::maximum": [(F, ROW), (I, I32)], "aten::minimum": [(F, ROW), (I, I32)],
    "aten::sub": [(F, ROW), (I, 2), (I32, F), (F, D[0], 2)], "aten::rsub": [(F, 2.0), (I, ROW)],
    "aten::div": [(F, ROW), (I, 2), (I, 2, "trunc"), (I32, I + 1, "floor"), (F, 3, "floor")],
    "aten::pow": [(F, 2), (I, 2), (2.0, F), (I32, F)],
    **{f"aten::{n}": [(F, ROW), (I, 3), (B, B)] for n in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and",
                                                            "logical_or", "logical_xor")},
    **{f"aten::{n}": [(I, I32), (B, B), (B, 1)] for n in ("bitwise_and", "bitwise_or", "bitwise_xor")},
    **{f"aten::{n}": _UNARY for n in ("exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tanh",
                                      "sigmoid", "erf", "reciprocal", "abs", "sign", "relu", "floor", "ceil",
                                      "round", "trunc", "neg")},
    "aten::logical_not": [(F,), (B,)], "aten::bitwise_not": [(I,), (B,)],
    "aten::where": [(B, F, I), (B, 1.5, I), (B, D, F)],
    "aten::clamp": [(F, 0.2, 0.9), (I, None, 5), (I, 0.5), (F, ROW, None)],
    "aten::lerp": [(F, D, 0.3), (F, ROW, F)],
    "aten::view": [(F, (4, 3)), (F, [-1])], "aten::reshape": [(F.T, (12,)), (F, (2, -1))],
    "aten::permute": [(F3, (2, 0, 1))], "aten::transpose": [(F3, 0, -1)], "aten::t": [(F,), (ROW,)],
    "aten::expand": [(ROW, (3, 4)), (F[:1], (2, 3, -1))], "aten::squeeze": [(F[:1],), (F3[:1], 0)],
    "aten::unsqueeze": [(F, -1), (F, 0)], "aten::flatten": [(F3,), (F3, 1)],
    "aten::narrow": [(F, 1, 1, 2), (F, 0, -2, 2)], "aten::select": [(F3, 1, -1)],
    "aten::slice": [(F, 1, 1, None, 2), (F, 0, -2)], "aten::unbind": [(F3, 1)],
    "aten::split": [(F, 2, 1), (F, [1, 2])], "aten::chunk": [(F, 3, 1)],
    "aten::contiguous": [(F.T,), (np.float32(2.5) * np.ones((), np.float32),)], "aten::clone": [(F,)], "aten::to": [(F, np.dtype(np.float64)), (I, None)],
    "aten::repeat": [(ROW, (2, 2))], "aten::flip": [(F, (0,))], "aten::tril": [(F, 1)], "aten::triu": [(I, -1)],
    "aten::detach": [(F,)],
    "aten::linear": [(F, F[:3] * 0.5, ROW[:3]), (F3, F[:2]), (ROW, F, None)],
    "aten::slice_scatter": [(F, F[:, 1:3] * 2, 1, 1, 3), (F, F[::2], 0, None, None, 2)],
    "aten::select_scatter": [(F, ROW, 0, -1), (F, F[:, 0] + 1, 1, 2)],
    "aten::zeros": [((2, 3),), ((2,), np.dtype(np.int32))], "aten::ones": [((0, 3),)], "aten::empty": [((4,),)],
    "aten::full": [((2, 2), 3), ((2,), 1.5), ((1,), True)],
    "aten::zeros_like": [(I,)], "aten::ones_like": [(F, np.dtype(np.float64))], "aten::empty_like": [(B,)],
    "aten::full_like": [(F, 2)], "aten::arange": [(5,), (1, 2, 0.25), (0, 10, 3)],
    "aten::linspace": [(0, 1, 5)], "aten::eye": [(3,), (2, 4)],
    "aten::rand": [((2, 3),)], "aten::randn": [((4,), None, np.dtype(np.float64))],
    "aten::randint": [(0, 5, (3,))], "aten::randperm": [(6,)],
    "aten::matmul": [(F, F.T), (ROW, ROW), (ROW, F.T), (F3, ROW), (F3[:, None], F3.transpose(0, 2, 1)), (I, I.T)],
    "aten::mm": [(F, F.T), (I32, I32.T)], "aten::bmm": [(F3, F3.transpose(0, 2, 1))],
    "aten::dot": [(ROW, ROW), (I[0], I[1])], "aten::mv": [(F, ROW)], "aten::outer": [(ROW, I[0]), (B[0], B[1])],
    "aten::addmm": [(ROW[:3], F, F.T, 0.5, 2), (I[:, :3], I, I.T, 2)],
    "aten::einsum": [("ij,kj->ik", [F, F]), ("ii->", [I[:, :3]]), ("...j,j", [F3, ROW]), ("i,j->ij", [B[0], B[1]])],
    "aten::index": [(F, [np.array([0, 2])]), (F3, [None, np.array([[0], [2]]), np.array([1, 3])]),
                    (F3, [np.array([1, 0]), None, np.array([0, 3])]), (F, [B]), (I, [None, B[0]]),
                    (F3, [None, None, np.array([[0, 3], [1, 2]], np.int32)])],
    "aten::index_put": [(F, [np.array([0, 2])], ROW), (I, [I > 5], np.array(0)),
                        (F, [None, np.array([1, 1])], np.ones((3, 1), np.float32), True)],
    "aten::alias": [(F,)],
    "aten::gather": [(F, 1, np.array([[0, 3], [1, 1], [2, 0]])), (F3, 0, np.zeros((1, 2, 2), np.int32))],
    "aten::scatter": [(F, 1, np.array([[0, 3], [1, 2]]), F), (I, 0, np.array([[2, 0]]), 7, "add")],
    "aten::scatter_add": [(F, 0, np.array([[0, 0, 1, 2]]), F)],
    "aten::index_select": [(F, 1, np.array([3, 0])), (I, 0, np.array([2], np.int32))],
    "aten::masked_fill": [(F, B, -1.0), (I, B[0], np.array(2.5)), (ROW, B, 0)],
    "aten::nonzero": [(B,), (I,)], "aten::nonzero_numpy": [(B,), (F3,)],
    "aten::cat": [([F, D], 1), ([I, B, I32], 0), ([np.zeros(0, np.float32), F], -1)],
    "aten::stack": [([F, F], 2), ([ROW, I[0]], -1)],
    "aten::sum": [(F,), (I32, (0,), True), (B, 1), (F, None, False, np.dtype(np.float64))],
    "aten::mean": [(F,), (D, [0, 1], True), (I, 1, False, np.dtype(np.float32))],
    "aten::prod": [(F, 1), (I32,), (B, 0, True)], "aten::cumsum": [(F, 1), (I32, 0), (B, -1, np.dtype(np.float32))],
    "aten::var": [(F,), (D, 1, 0, True)], "aten::std": [(F, (0, 1)), (D, None, 2)],
    "aten::max": [(F,), (B,)], "aten::min": [(I,)],
    "aten::max.dim": [(F, 1), (I, 0, True)], "aten::min.dim": [(F, -1, True), (B, 0)],
    "aten::amax": [(F, (0, 1)), (I, 1, True)], "aten::amin": [(F,), (B, 0)],
    "aten::argmax": [(F,), (I, 1, True)], "aten::argmin": [(F, 0), (I32, None, True)],
    "aten::logsumexp": [(F, 1), (I, (0, 1), True)],
    "aten::norm": [(F,), (F, 1, 1, True), (D, float("inf"), (0,)), (F, 3.5, None, False, np.dtype(np.float64))],
    "aten::all": [(F,), (B, 1, True)], "aten::any": [(I, (0, 1)), (B,)], "aten::count_nonzero": [(F,), (I, 0)],
    "aten::softmax": [(F, 1), (I, 0, np.dtype(np.float64))], "aten::log_softmax": [(D, -1), (F, 0)],
    "aten::sort": [(F, 0, True), (I, -1)], "aten::argsort": [(F,), (B, 0, True)],
    "aten::topk": [(F, 2), (I, 1, 0, False)], "aten::unique": [(I,), (F3, True, True, True, 1)],
    "aten::binary_cross_entropy": [(F / 2, np.linspace(0.05, 0.95, 12, dtype=np.float32).reshape(3, 4)),
                                   (D / 2, D / 3, D[0] / 2, 0), (F3 / 5 + 0.03, F3 / 6 + 0.1, None, 2)],
    # extra_math.py, extra_movement.py, extra_random.py
    **{f"aten::{n}": [(np.array([0.5, np.nan, np.inf, -np.inf, -2], np.float32),), (D,), (I32,), (B,)]
       for n in ("isnan", "isinf", "isfinite", "isposinf", "isneginf")},
    "aten::nan_to_num": [(np.array([0.5, np.nan, np.inf, -np.inf, -2], np.float32),), (D, 1.0, 2.0, -3.0),
                         (np.array([np.nan, np.inf, -np.inf]), None, 1e300), (I,)],
    **{f"aten::{n}": [(F / 2,), (D / 2,), (I32 % 2,)] for n in ("log2", "tan", "asin", "acos", "atan")},
    "aten::log2": [(F,), (D,), (I + 1,)],
    "aten::copysign": [(F, -ROW), (I, -1), (B, np.array([-1.0, 0.5, -0.5, 2.0]))],  # no zeros: sign jumps
    "aten::fmod": [(F * 3 - 1.05, 0.7), (I - 5, 3), (F, ROW + 0.05)],  # away from its jumps
    "aten::roll": [(F, 1), (F3, (1, -2), (0, 2)), (I, -5, -1), (np.float32(2.5) * np.ones((), np.float32), 3)],
    "aten::repeat_interleave.Tensor": [(np.array([1, 0, 3]),), (np.array([2, 2], np.int32), 4)],
    "aten::multinomial": [(ROW, 3), (F, 6, True), (D[:, :2], 1, False)],
    "aten::searchsorted": [(ROW, F), (np.sort(F, axis=1), F[:, :2] + 0.05, True), (I[0], 2, False, None, "right"),
                           (F, F[:, ::-1].copy(), False, False, None, np.argsort(F, axis=1))],
    "aten::bucketize": [(F, ROW), (I, I[0], True, True), (1.5, ROW)],
    # conv / pooling (sin/cos values: distinct, so max pooling has no ties)
    "aten::conv2d": [(np.sin(np.arange(50) * 1.3).astype(np.float32).reshape(1, 2, 5, 5),
                      np.cos(np.arange(24) * 0.7).astype(np.float32).reshape(3, 2, 2, 2), ROW[:3]),
                     (np.sin(np.arange(48) * 1.3).astype(np.float32).reshape(2, 2, 3, 4),
                      np.cos(np.arange(12) * 0.7).astype(np.float32).reshape(4, 1, 1, 3), None, (2, 1), 1, (1, 2), 2),
                     (np.sin(np.arange(50) * 1.3).astype(np.float32).reshape(2, 5, 5),
                      np.cos(np.arange(24) * 0.7).astype(np.float32).reshape(3, 2, 2, 2), None, 1, (1, 0)),
                     (I.reshape(1, 1, 3, 4), I[:2, :2].reshape(1, 1, 2, 2))],
    "aten::conv1d": [(F3, np.cos(np.arange(12) * 0.7).astype(np.float32).reshape(2, 3, 2), ROW[:2]),
                     (F3, np.cos(np.arange(6) * 0.7).astype(np.float32).reshape(3, 1, 2), None, 2, 1, 1, 3),
                     (F3[0], np.cos(np.arange(12) * 0.7).astype(np.float32).reshape(2, 3, 2), None, 1, 1, 2)],
    "aten::conv_transpose2d": [(np.sin(np.arange(18) * 1.3).astype(np.float32).reshape(1, 2, 3, 3),
                                np.cos(np.arange(24) * 0.7).astype(np.float32).reshape(2, 3, 2, 2), ROW[:3]),
                               (np.sin(np.arange(24) * 1.3).astype(np.float32).reshape(2, 2, 3, 2),
                                np.cos(np.arange(12) * 0.7).astype(np.float32).reshape(2, 1, 2, 3), None, 2, 1, 1, 2),
                               (np.sin(np.arange(18) * 1.3).astype(np.float32).reshape(1, 2, 3, 3),
                                np.cos(np.arange(16) * 0.7).astype(np.float32).reshape(2, 2, 2, 2), None, 1, 0, 1, 1, 2),
                               (np.sin(np.arange(18) * 1.3).astype(np.float32).reshape(2, 3, 3),
                                np.cos(np.arange(24) * 0.7).astype(np.float32).reshape(2, 3, 2, 2))],
    "aten::im2col": [(np.sin(np.arange(40) * 1.3).astype(np.float32).reshape(1, 2, 4, 5), (2, 3), 1, (1, 0), (2, 1)),
                     (F3, (2, 2), 2, 1, 1)],
    "aten::_im2col_rows": [(np.sin(np.arange(40) * 1.3).astype(np.float32).reshape(1, 2, 4, 5), (2, 3), 1, (1, 0),
                            (2, 1)),
                           (np.stack([F3, -F3]), (2, 2), 2, 1, 1)],
    "aten::col2im": [(np.sin(np.arange(108) * 1.3).astype(np.float32).reshape(1, 12, 9), (4, 5), (2, 3), 1, (1, 0), (2, 1)),
                     (np.sin(np.arange(16) * 1.3).astype(np.float32).reshape(8, 2), (3, 2), 2, 1, 0, 1)],
    "aten::max_pool2d": [(np.sin(np.arange(100) * 1.3).astype(np.float32).reshape(2, 2, 5, 5), 2),
                         (np.sin(np.arange(100) * 1.3).astype(np.float32).reshape(2, 2, 5, 5), 3, 2, 1, 1, True),
                         (np.sin(np.arange(50) * 1.3).astype(np.float32).reshape(2, 5, 5), (2, 3), (1, 2), 0, (2, 1)),
                         (I.reshape(1, 3, 4), 2)],
    "aten::max_pool2d_with_indices": [(np.sin(np.arange(100) * 1.3).astype(np.float32).reshape(2, 2, 5, 5), 2),
                                      (np.sin(np.arange(50) * 1.3).astype(np.float32).reshape(2, 5, 5), 3, 2, 1, 2, True),
                                      (I32.reshape(1, 1, 3, 4), (1, 2))],
    "aten::_max_pool2d_backward": [(np.cos(np.arange(32) * 0.7).astype(np.float32).reshape(2, 2, 2, 4),
                                    np.sin(np.arange(128) * 1.3).astype(np.float32).reshape(2, 2, 4, 8), 2),
                                   (np.cos(np.arange(18) * 0.7).astype(np.float32).reshape(2, 3, 3),
                                    np.sin(np.arange(50) * 1.3).astype(np.float32).reshape(2, 5, 5), 3, 2, 1, 1, True)],
    "aten::avg_pool2d": [(np.sin(np.arange(100) * 1.3).astype(np.float32).reshape(2, 2, 5, 5), 2),
                         (np.sin(np.arange(100) * 1.3).astype(np.float32).reshape(2, 2, 5, 5), 3, 2, 1, True, False),
                         (np.sin(np.arange(50) * 1.3).astype(np.float32).reshape(2, 5, 5), (2, 3), 1, 1, False, True, 5),
                         (I.reshape(1, 3, 4), 2)],
    "aten::_avg_pool2d_backward": [(np.sin(np.arange(16) * 1.3).astype(np.float32).reshape(2, 2, 2, 2), (2, 2, 5, 5),
                                    2, [], 0, False, True, None),
                                   (np.sin(np.arange(18) * 1.3).astype(np.float32).reshape(2, 3, 3), (2, 5, 5),
                                    3, 2, 1, True, False, None)],
    "aten::adaptive_avg_pool2d": [(np.sin(np.arange(100) * 1.3).astype(np.float32).reshape(2, 2, 5, 5), 3),
                                  (np.sin(np.arange(100) * 1.3).astype(np.float32).reshape(2, 2, 5, 5), (2, 5)),
                                  (np.sin(np.arange(50) * 1.3).astype(np.float32).reshape(2, 5, 5), 1)],
    # border padding (negative sizes crop) and its adjoints
    **{f"aten::{kind}_pad1d": [(F3, (2, 1)), (F, (-1, 3)), (I.reshape(1, 3, 4), (0, 2))]
       for kind in ("reflection", "replication")},
    **{f"aten::{kind}_pad2d": [(F3, (1, 2, 2, 0)), (F.reshape(1, 1, 3, 4), (-1, 1, 1, 1)), (I32.reshape(1, 3, 4), (1, 1, 0, 2))]
       for kind in ("reflection", "replication")},
    **{f"aten::{kind}_pad3d": [(F3[None], (1, 1, 2, 1, 1, 0)), (F3[None, None], (0, -1, 1, 1, 1, 1))]
       for kind in ("reflection", "replication")},
    **{f"aten::{kind}_pad1d_backward": [(np.sin(np.arange(42) * 1.3).reshape(2, 3, 7).astype(np.float32), F3, (2, 1))]
       for kind in ("reflection", "replication")},
    **{f"aten::{kind}_pad2d_backward": [(np.sin(np.arange(84) * 1.3).reshape(2, 6, 7).astype(np.float32), F3,
                                         (1, 2, 2, 1))] for kind in ("reflection", "replication")},
    **{f"aten::{kind}_pad3d_backward": [(np.sin(np.arange(168) * 1.3).reshape(1, 4, 6, 7).astype(np.float32), F3[None],
                                         (1, 2, 2, 1, 1, 1))] for kind in ("reflection", "replication")},
    # Tensor.unfold (overlapping, gapped and whole-dim windows) and its adjoint
    "aten::unfold": [(F3, 2, 2, 1), (F, 0, 2, 2), (I, -1, 4, 1), (np.float32(1.5) * np.ones((), np.float32), 0, 1, 1)],
    "aten::unfold_backward": [(np.sin(np.arange(36) * 1.3).reshape(2, 3, 2, 3), (2, 3, 4), 2, 3, 1),
                              (np.sin(np.arange(16) * 1.3).reshape(2, 4, 2), (2, 9), 1, 2, 2)],
}



def _wave(n: int, *shape, step: float = 1.3, dtype=np.float32):
    """Distinct values (no ties for max pooling) of the given shape."""
    return np.sin(np.arange(n) * step).astype(dtype).reshape(shape)


# conv_nd.py and adaptive_pool.py: 3-D convolution and pooling, 1-D and 3-D transposed convolution
SAMPLES.update({
    "aten::conv3d": [(_wave(54, 1, 2, 3, 3, 3), _wave(32, 2, 2, 2, 2, 2, step=0.7), ROW[:2]),
                     (_wave(96, 1, 2, 4, 4, 3), _wave(8, 4, 1, 2, 1, 1, step=0.7), None, (2, 1, 1), 1, (1, 2, 1), 2),
                     (_wave(54, 2, 3, 3, 3), _wave(32, 2, 2, 2, 2, 2, step=0.7), None, 1, (1, 0, 0)),
                     (I.reshape(1, 1, 1, 3, 4), I[:2, :2].reshape(1, 1, 1, 2, 2))],
    "aten::conv_transpose1d": [(_wave(8, 1, 2, 4), _wave(18, 2, 3, 3, step=0.7), ROW[:3]),
                               (_wave(12, 2, 2, 3), _wave(4, 2, 1, 2, step=0.7), None, 2, 1, 1, 2),
                               (_wave(8, 2, 4), _wave(8, 2, 2, 2, step=0.7), None, 1, 0, 1, 1, 2)],
    "aten::conv_transpose3d": [(_wave(16, 1, 2, 2, 2, 2), _wave(48, 2, 3, 2, 2, 2, step=0.7), ROW[:3]),
                               (_wave(24, 1, 2, 3, 2, 2), _wave(8, 2, 1, 2, 2, 1, step=0.7), None, (2, 1, 2), 1,
                                (1, 0, 1), 2),
                               (_wave(16, 2, 2, 2, 2), _wave(16, 2, 1, 2, 2, 2, step=0.7), None, 1, 0, 1, 1, 2)],
    "aten::max_pool3d": [(_wave(128, 2, 1, 4, 4, 4), 2), (_wave(125, 1, 5, 5, 5), 3, 2, 1, 1, True),
                         (_wave(150, 1, 2, 5, 3, 5), (2, 1, 3), (1, 1, 2), (1, 0, 1), (2, 1, 1)),
                         (I.reshape(1, 1, 3, 4), (1, 2, 2))],
    "aten::max_pool3d_with_indices": [(_wave(128, 2, 1, 4, 4, 4), 2), (_wave(125, 1, 5, 5, 5), 3, 2, 1, 2, True),
                                      (I32.reshape(1, 1, 1, 3, 4), (1, 1, 2))],
    "aten::avg_pool3d": [(_wave(128, 2, 1, 4, 4, 4), 2), (_wave(125, 1, 5, 5, 5), 3, 2, 1, True, False),
                         (_wave(150, 1, 2, 5, 3, 5), (2, 1, 3), 1, (1, 0, 1), False, True, 5),
                         (I.reshape(1, 1, 3, 4), (1, 2, 2))],
    "aten::_avg_pool3d_backward": [(_wave(16, 2, 1, 2, 2, 2), (2, 1, 4, 4, 4), 2, [], 0, False, True, None),
                                   (_wave(27, 1, 3, 3, 3), (1, 5, 5, 5), 3, 2, 1, True, False, None)],
    "aten::adaptive_max_pool2d": [(_wave(100, 2, 2, 5, 5), 3), (_wave(60, 1, 2, 5, 6), (2, 4)),
                                  (_wave(50, 2, 5, 5), 1)],
    "aten::adaptive_max_pool3d": [(_wave(120, 1, 2, 3, 4, 5), (2, 3, 2)), (_wave(60, 1, 3, 4, 5), 1)],
    "aten::adaptive_avg_pool3d": [(_wave(120, 1, 2, 3, 4, 5), (2, 3, 2)), (_wave(64, 2, 2, 2, 4, 2), (1, 2, 1)),
                                  (_wave(60, 1, 3, 4, 5), 1)],
})


def _upsample_samples(name: str, nd: int, kind: str) -> dict:
    """Calls of one resampling op and of its adjoint: up and down, with and without scale factors."""
    x = np.sin(np.arange(2 * 3 ** nd) * 1.3).astype(np.float32).reshape((1, 2) + (3,) * nd)
    align = (lambda flag: (flag,)) if interpolates(kind) else (lambda flag: ())
    up, down = (5,) + (4,) * (nd - 1), (2,) + (3,) * (nd - 1)
    forward = [(x, up, *align(False)), (x, down, *align(True)), (x, up, *align(False), *(1.7,) * nd),
               (x[0, :1].astype(np.float64)[None], (6,) * nd, *align(True), *(2.0,) * nd)]
    grad = np.cos(np.arange(2 * 5 * 4 ** (nd - 1)) * 0.7).astype(np.float32).reshape((1, 2) + up)
    backward = [(grad, up, x.shape, *align(False)), (grad, up, x.shape, *align(True), *(1.7,) * nd)]
    return {f"aten::{name}": forward, f"aten::{name}_backward": backward}


for _name, (_nd, _kind) in UPSAMPLE_OPS.items():
    SAMPLES.update(_upsample_samples(_name, _nd, _kind))

C = (F + 1j * F[::-1]).astype(np.complex64)  # complex ops (ops/complex.py)
SAMPLES.update({
    "aten::view_as_real": [(C,), (C.T,), (C.astype(np.complex128)[0],)],
    "aten::view_as_complex": [(F3[..., :2],), (D[:, :2],)],
    "aten::real": [(C,), (F,)], "aten::imag": [(C,)], "aten::conj": [(C,), (I,)],
    "aten::polar": [(F, F[::-1]), (D[0], D[1])], "aten::complex": [(F, ROW), (D, D)],
})

_T, _B, _H = 3, 2, 4  # recurrent time loops (ops/recurrent.py): gates, states, weights; backward: grads, hs
_G = {"lstm": 4, "gru": 3, "rnn": 1}
_S = {k: (_wave(_T * _B * g * _H, _T, _B, g * _H), _wave(_B * _H, _B, _H, step=0.7),
          _wave(g * _H * _H, g * _H, _H, step=0.3) * 0.5, _wave(g * _H, g * _H, step=0.9)) for k, g in _G.items()}
_HS = _wave(_T * _B * _H, _T, _B, _H, step=0.4)
SAMPLES.update({
    "aten::_lstm_sequence": [(_S["lstm"][0], _S["lstm"][1], _S["lstm"][1] * 2, _S["lstm"][2], _S["lstm"][3], True),
                             (_S["lstm"][0], _S["lstm"][1], _S["lstm"][1], _S["lstm"][2], None)],
    "aten::_gru_sequence": [(_S["gru"][0], _S["gru"][1], _S["gru"][2], _S["gru"][3], True),
                            (_S["gru"][0].astype(np.float64), _S["gru"][1].astype(np.float64),
                             _S["gru"][2].astype(np.float64))],
    "aten::_rnn_sequence": [(_S["rnn"][0], _S["rnn"][1], _S["rnn"][2], _S["rnn"][3], True, True),
                            (_S["rnn"][0], _S["rnn"][1], _S["rnn"][2])],
    "aten::_lstm_sequence_backward": [(_HS, _S["lstm"][1], *_S["lstm"][:2], _S["lstm"][1], *_S["lstm"][2:], _HS, r)
                                      for r in (False, True)],
    "aten::_gru_sequence_backward": [(_HS, *_S["gru"][:2], *_S["gru"][2:], _HS, r) for r in (False, True)],
    "aten::_rnn_sequence_backward": [(_HS, np.tanh(_HS), _S["rnn"][2], r, not r) for r in (False, True)],
})

# Ops that return Python values or write into their first argument: no TensorMeta to compare.
NOT_TENSOR_VALUED = {"aten::size"}
