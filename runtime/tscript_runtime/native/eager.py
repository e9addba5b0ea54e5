"""Eager ops on the kernel library: the `conv2d`/`conv1d`, `im2col` (F.unfold), `max_pool2d` and
`avg_pool2d` kernels (the eager dispatcher's and the executor's) call the same compiled functions the
whole-graph entry calls, through ctypes, so a user who never compiles runs them too.

`install()` puts the entry points into the op table's accelerated slots (`ops/accelerated.py`); the
library is linked the first time one of them runs (from the on-disk object cache when it is there),
once per process. Each returns None for what it does not cover (dtypes other than float32 for the
GEMMs, a library that cannot be built here, empty tensors), and the numpy kernel runs instead.
Matrix products and erf are in `eager_math.py`, large elementwise add, mul and relu in
`eager_pointwise.py`.

A convolution is, per image and group, the packed GEMM `out (O, L) = W (O, K) @ col` into the
output (small images several to a GEMM, their columns side by side, as the entry does), whose rows hold
the bias first, its columns packed straight from the image (implicit im2col;
a 1x1 stride-1 unpadded convolution reads the image itself); one input channel per group goes to the direct depthwise
kernel, which also sums average pooling's windows. Float32 max pooling runs its two halves of planes at
once (through eager_kernels.py's range-of-planes call of the library's kernel). Outputs of 8 MiB or more
come from recycled.py. Scratch buffers are per thread (the ctypes calls release the GIL).
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np

from ..ops import accelerated
from . import library, recycled

_P, _I32, _I64, _F32 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64, ctypes.c_float
_SIGNATURES = {
    "tscript_erf_f32": (_P, _P, _I64),
    "tscript_im2col_f32": (_P, _P, _P),
    "tscript_im2col_f64": (_P, _P, _P),
    "tscript_im2col_ld_f32": (_P, _P, _P, _I64),
    "tscript_max_pool2d_f32": (_P, _P, _P),
    "tscript_max_pool2d_f64": (_P, _P, _P),
    "tscript_sgemm_f32": (_I32, _I32, _I64, _I64, _I64, _P, _I64, _P, _I64, _F32, _P, _I64, _P),
    "tscript_sgemm_conv_f32": (_I64, _I64, _I64, _P, _I64, _P, _P, _I64, _F32, _P, _I64, _P, _P, _P),
    "tscript_depthwise2d_f32": (_P, _P, _P, _P),
    "tscript_depthwise2d_f64": (_P, _P, _P, _P),
    "tscript_parallel2": (_P,) * 7,
    "tscript_conv_transpose_add_f32": (_P,) * 4,
}
NO_TRANS = 111  # CBLAS's flag, as tscript_sgemm_f32 reads it
IM2COL_SPLIT = 1 << 15  # column elements from which an image's im2col goes to both threads
DEPTHWISE_SPLIT = 1 << 15  # multiply-adds from which a depthwise convolution's planes go to both threads
# Outputs a row from which pooling runs natively: the kernels compute a vector of outputs along a row,
# and for a global pooling's one output a row numpy measured 5-10x faster.
MIN_POOL_ROW = 4
POOL_SPLIT = 1 << 16  # outputs from which a float32 max pooling's halves of planes go to both threads
KEPT_COLUMNS = 1 << 24  # bytes of im2col scratch a thread keeps between convolutions
_lock = threading.Lock()
_state: dict = {}
_local = threading.local()


def install() -> None:
    """Make this module's functions the op table's accelerated conv2d, im2col, max_pool2d and
    avg_pool2d (window sums) kernels, and eager_math's and eager_pointwise's theirs."""
    accelerated.install("conv2d", conv2d)
    accelerated.install("conv_transpose2d", conv_transpose2d)
    accelerated.install("max_pool2d", max_pool2d)
    accelerated.install("im2col", im2col)
    accelerated.install("window_sums2d", window_sums2d)
    from . import eager_math  # (it builds on this module)
    accelerated.install("matmul", eager_math.matmul)
    accelerated.install("erf", eager_math.erf)
    from . import eager_pointwise
    eager_pointwise.install(accelerated)


class _Library:
    """The library's functions this module calls: `fn` name -> ctypes callable, `address` name ->
    address (to hand a kernel to tscript_parallel2), `pack_bytes` (the packed GEMM's scratch size)."""

    def __init__(self, addresses: dict, packed_gemm: bool, pack_bytes):
        self.address, self.pack_bytes = addresses, pack_bytes
        self.fn = {name: ctypes.CFUNCTYPE(None, *args)(addresses[name])
                   for name, args in _SIGNATURES.items() if name in addresses}
        if not packed_gemm:  # it is tuned for 32 vector registers: elsewhere numpy's BLAS is faster
            self.fn.pop("tscript_sgemm_f32", None)
            self.fn.pop("tscript_sgemm_conv_f32", None)


def functions() -> _Library | None:
    """The kernel library, linked the first time (once per process); None when it cannot be built or
    linked here (no llvmlite, LLVM failing)."""
    if "library" not in _state:
        with _lock:
            if "library" not in _state:
                _state["library"] = _link()
    return _state["library"]


def _link() -> _Library | None:
    try:
        found = library.addresses(_SIGNATURES)  # (the parts holding these: the im2col_part kernels too)
        library.parallel2()  # the worker the GEMM's two halves go to
        from .library.blocking import pack_bytes
        from .target import host
        return _Library(found, "+avx512f" in host()["features"].split(","), pack_bytes)
    except Exception:  # whatever stops LLVM here only means the numpy kernels run: eager must not fail
        return None


# -- convolution --------------------------------------------------------------------------------

def conv2d(x, weight, bias, stride, padding, dilation, groups: int, out):
    """The batched (N, C, H, W) convolution `ops/conv.py` checked (its normalised stride, padding,
    dilation, groups and output size `out`), or None when not covered here."""
    lib = functions()
    if lib is None or x.ndim != 4 or 0 in x.shape or 0 in weight.shape or 0 in out:
        return None
    depthwise = weight.shape[1] == 1 and f"tscript_depthwise2d_{_suffix(x.dtype)}" in lib.fn
    if not (depthwise or x.dtype == np.float32 and "tscript_sgemm_f32" in lib.fn):
        return None
    x, weight = np.ascontiguousarray(x), np.ascontiguousarray(weight)
    bias = None if bias is None else np.ascontiguousarray(bias)
    (n, _, h, w), (o, cg, kh, kw) = x.shape, weight.shape
    dims = (cg, h, w, kh, kw) + tuple(stride) + tuple(padding) + tuple(dilation) + tuple(out)
    y = recycled.empty((n, o) + tuple(out), x.dtype)
    if depthwise:
        _depthwise(lib, x, weight, bias, dims + (n, o // groups, kh * kw, out[0] * out[1], groups, 0, 0), y)
    else:
        _by_columns(lib, x, weight, bias, dims, groups, y)
    return y


def _by_columns(lib: _Library, x, weight, bias, dims: tuple, groups: int, y) -> None:
    """Per image and group: out rows (bias or nothing) += W @ columns, the columns the image itself
    (1x1 stride-1 unpadded), packed straight from it by the implicit-im2col GEMM where that measured
    faster (library.conv.packs_from_image), else im2col'd into a scratch first."""
    (n, c, h, w), (o, cg, kh, kw), (oh, ow) = x.shape, weight.shape, y.shape[2:]
    og, k, length = o // groups, cg * kh * kw, oh * ow
    pointwise = _pointwise(dims)
    from .library.conv import images_per_gemm, packs_from_image
    images = images_per_gemm(n, groups, length)
    if images > 1 and "tscript_im2col_ld_f32" in lib.fn:
        _small_images(lib, x, weight, bias, dims, images, y)
        return
    implicit = lib.fn.get("tscript_sgemm_conv_f32") if packs_from_image(pointwise, dims[6], og, length) else None
    buffers = _scratch(0 if pointwise or implicit else k * length, lib.pack_bytes(og, length, k))
    col, pack = (_address(a) for a in buffers)
    if bias is not None:
        y.reshape(n, o, length)[:] = bias[:, None]
    beta = 0.0 if bias is None else 1.0
    columns = None if pointwise or implicit else _Columns(lib, dims, "f32")
    geo = np.array(dims, np.int64)
    sgemm = lib.fn["tscript_sgemm_f32"]
    xa, wa, ya = _address(x), _address(weight), _address(y)
    for i in range(n):
        for g in range(groups):
            image, wg, yg = xa + 4 * (i * c + g * cg) * h * w, wa + 4 * g * og * k, ya + 4 * (i * o + g * og) * length
            if implicit:
                implicit(og, length, k, wg, k, _address(geo), image, cg * h * w, beta, yg, length, pack, None, None)
                continue
            if columns is not None:
                columns(image, col)
            sgemm(NO_TRANS, NO_TRANS, og, length, k, wg, k, image if columns is None else col, length, beta, yg, length,
                  pack)


def _pointwise(dims: tuple) -> bool:
    """Is the convolution of GEOMETRY `dims` 1x1, stride 1, unpadded (its input is its im2col columns)?"""
    return tuple(dims[3:5]) == (1, 1) and tuple(dims[5:9]) == (1, 1, 0, 0)


def _small_images(lib: _Library, x, weight, bias, dims: tuple, images: int, y) -> None:
    """A one-group convolution of small images (7x7, 14x14), `images` at a time, as the entry runs it:
    their columns side by side (packed from the images, or im2col'd), one GEMM of images * L columns
    into a scratch, then each image's (O, L) block into `y` plus the bias (one GEMM per image would
    waste much of the micro-kernel on its edge panel: 49 columns of 64)."""
    from .library.conv import packs_from_image
    (n, c, h, w), (o, k), length = x.shape, (weight.shape[0], weight[0].size), y.shape[2] * y.shape[3]
    implicit = lib.fn.get("tscript_sgemm_conv_f32") if packs_from_image(_pointwise(dims), dims[6], o, images * length,
                                                                              images) else None
    col, pack = (_address(a) for a in _scratch(0 if implicit else k * images * length,
                                                lib.pack_bytes(o, images * length, k)))
    product = np.empty(o * images * length, np.float32)  # (O, ld) for each chunk's ld
    geo, at, wa = np.array(dims, np.int64), _address(product), _address(weight)
    for first in range(0, n, images):
        count = min(images, n - first)
        ld, image = count * length, _address(x) + 4 * first * c * h * w
        if implicit:
            implicit(o, ld, k, wa, k, _address(geo), image, c * h * w, 0.0, at, ld, pack, None, None)
        else:
            for i in range(count):
                lib.fn["tscript_im2col_ld_f32"](_address(geo), image + 4 * i * c * h * w, col + 4 * i * length, ld)
            lib.fn["tscript_sgemm_f32"](NO_TRANS, NO_TRANS, o, ld, k, wa, k, col, ld, 0.0, at, ld, pack)
        block = product[:o * ld].reshape(o, count, length).transpose(1, 0, 2)
        target = y[first:first + count].reshape(count, o, length)
        if bias is None:
            target[...] = block
        else:
            np.add(block, bias[:, None], out=target)


def conv_transpose2d(x, weight, bias, stride, padding, dilation, groups: int, out):
    """The batched (N, C, H, W) float32 transposed convolution `ops/conv.py` checked (its normalised
    stride, padding, dilation, groups and output size `out`) as the whole-graph entry computes it
    (native/conv_transpose.py): per group one product of all pixels, columns = pixel rows @ W, then
    the library's overlap-add; or None when not covered (other dtypes, no packed GEMM here)."""
    lib = functions()
    if lib is None or x.dtype != np.float32 or weight.dtype != np.float32 or "tscript_sgemm_f32" not in lib.fn \
            or x.ndim != 4 or 0 in x.shape or 0 in weight.shape or 0 in out:
        return None
    from .library.transposed import COLUMN_PAD, writes_output
    x, weight = np.ascontiguousarray(x), np.ascontiguousarray(weight)
    bias = None if bias is None else np.ascontiguousarray(bias, np.float32)
    (n, c, h, w), (_, og, kh, kw) = x.shape, weight.shape
    width, pixels = og * kh * kw, h * w
    y = np.empty((n, og * groups) + tuple(out), np.float32)
    rows = x.reshape(n * pixels, c) if pixels == 1 else \
        np.ascontiguousarray(x.reshape(n, c, pixels).transpose(0, 2, 1)).reshape(n * pixels, c)
    direct = writes_output(pixels, (kh, kw), padding, dilation, out)  # the columns are the output
    ld = groups * width + COLUMN_PAD
    col, pack = _scratch(0 if direct else n * pixels * ld, lib.pack_bytes(n * pixels, width, c // groups))
    if direct:
        if bias is not None:
            y[:] = bias[:, None, None]
        _transposed_products(lib, (rows, weight, y.reshape(n, -1), pack), groups, 0.0 if bias is None else 1.0)
        return y
    cols = col[:n * pixels * ld].reshape(n * pixels, ld)
    _transposed_products(lib, (rows, weight, cols, pack), groups, 0.0)
    dims = (c // groups, h, w, kh, kw) + tuple(stride) + tuple(padding) + tuple(dilation) + tuple(out) + \
        (n, og, groups, n, 0, 0)
    _overlap_add(lib, dims, (_address(cols), _address(y), None if bias is None else _address(bias)))
    return y


def _transposed_products(lib: _Library, arrays: tuple, groups: int, beta: float) -> None:
    """Per group g: c[:, g's columns] = rows[:, g's channels] @ W_g (+ beta c) by the packed GEMM
    (`arrays`: rows, weight, c, the GEMM's packing scratch)."""
    rows, weight, c, pack = arrays
    (m, channels), (_, og, kh, kw) = rows.shape, weight.shape
    cg, width = channels // groups, og * kh * kw
    ra, wa, ca, pack = _address(rows), _address(weight), _address(c), _address(pack)
    for g in range(groups):
        lib.fn["tscript_sgemm_f32"](NO_TRANS, NO_TRANS, m, width, cg, ra + 4 * g * cg, channels,
                                    wa + 4 * g * cg * width, width, beta, ca + 4 * g * width, c.shape[1], pack)


def _overlap_add(lib: _Library, dims: tuple, pointers: tuple) -> None:
    """The library's overlap-add (CONVT_SLOTS `dims`; `pointers`: cols, out, bias), its two halves of
    output channels at once when there is enough to add."""
    from .conv_transpose import OVERLAP_SPLIT
    name = "tscript_conv_transpose_add_f32"
    channels, images = dims[14] * dims[15], dims[13]
    geo, ptrs = (ctypes.c_int64 * len(dims))(*dims), (ctypes.c_void_p * 3)(*pointers)
    if channels >= 2 and images * dims[1] * dims[2] * channels * dims[3] * dims[4] >= OVERLAP_SPLIT:
        parts = (ctypes.c_int64 * 6)(0, channels // 2, images, channels // 2, channels, images)
        lib.fn["tscript_parallel2"](lib.address[name], parts, ptrs, ctypes.addressof(parts) + 24, ptrs, geo, None)
    else:
        lib.fn[name]((ctypes.c_int64 * 3)(0, channels, images), ptrs, geo, None)


def im2col(x, kernel, dilation, padding, stride, out):
    """F.unfold's columns (N, C*kh*kw, OH*OW) of (N, C, H, W) float32 or float64 `x` (the normalised
    arguments `ops/conv.py` checked; `out`: the grid of blocks), or None."""
    lib = functions()
    suffix = _suffix(x.dtype)
    if lib is None or not suffix or x.ndim != 4 or 0 in x.shape or 0 in out:
        return None
    x = np.ascontiguousarray(x)
    (n, c, h, w), (kh, kw) = x.shape, kernel
    cols = np.empty((n, c * kh * kw, out[0] * out[1]), x.dtype)
    dims = (c, h, w, kh, kw) + tuple(stride) + tuple(padding) + tuple(dilation) + tuple(out)
    columns = _Columns(lib, dims, suffix)
    for i in range(n):
        columns(_address(x) + i * x.itemsize * c * h * w, _address(cols) + i * cols.itemsize * cols[0].size)
    return cols


class _Columns:
    """im2col of one image's (group of) channels: its two halves of channels at once when there are
    enough columns to copy (on one thread im2col takes about a quarter of a convolution's time)."""

    def __init__(self, lib: _Library, dims: tuple, suffix: str):
        channels, kh, kw, oh, ow = dims[0], dims[3], dims[4], dims[11], dims[12]
        self.geo = (ctypes.c_int64 * len(dims))(*dims)
        self.lib, self.whole = lib, lib.fn[f"tscript_im2col_{suffix}"]
        self.split = channels >= 2 and channels * kh * kw * oh * ow >= IM2COL_SPLIT
        if self.split:
            self.parts = (ctypes.c_int64 * 3)(0, channels // 2, channels)
            self.ptrs = (ctypes.c_void_p * 2)()
            self.address = lib.address[f"tscript_im2col_part_{suffix}"]

    def __call__(self, image: int, col: int) -> None:
        """The columns of the image at address `image` into `col`."""
        if not self.split:
            self.whole(self.geo, image, col)
            return
        self.ptrs[0], self.ptrs[1] = image, col
        self.lib.fn["tscript_parallel2"](self.address, self.parts, self.ptrs, ctypes.addressof(self.parts) + 8,
                                         self.ptrs, self.geo, None)


def _depthwise(lib: _Library, x, weight, bias, dims: tuple, y) -> None:
    """Every output plane by the library's direct kernel (`dims`: CONV_SLOTS), its halves of planes on
    both threads when there is enough work."""
    name = f"tscript_depthwise2d_{_suffix(x.dtype)}"
    kernel = lib.fn[name]
    planes = y.shape[0] * y.shape[1]
    ptrs = (ctypes.c_void_p * 4)(_address(x), _address(weight), None if bias is None else _address(bias), _address(y))
    geo = (ctypes.c_int64 * len(dims))(*dims)
    if planes >= 2 and planes * y.shape[2] * y.shape[3] * weight.shape[2] * weight.shape[3] >= DEPTHWISE_SPLIT:
        sizes = (ctypes.c_int64 * 3)(0, planes // 2, planes)
        lib.fn["tscript_parallel2"](lib.address[name], sizes, ptrs, ctypes.addressof(sizes) + 8, ptrs, geo, None)
    else:
        kernel((ctypes.c_int64 * 2)(0, planes), ptrs, geo, None)


# -- pooling ------------------------------------------------------------------------------------

def max_pool2d(x, kernel, stride, padding, dilation, out):
    """The (N, C, H, W) max pooling `ops/conv.py` checked (normalised arguments, output size `out`:
    windows past the input, as ceil mode makes, see only their part inside), or None (rows of fewer
    than MIN_POOL_ROW outputs too)."""
    lib = functions()
    name = f"tscript_max_pool2d_{_suffix(x.dtype)}"
    if lib is None or name not in lib.fn or x.ndim != 4 or 0 in x.shape or out[1] < MIN_POOL_ROW:
        return None
    x = np.ascontiguousarray(x)
    (n, c, h, w) = x.shape
    y = recycled.empty((n, c) + tuple(out), x.dtype)
    dims = (n * c, h, w) + tuple(kernel) + tuple(stride) + tuple(padding) + tuple(dilation) + tuple(out)
    if not _pool_halves(x, y, dims):
        lib.fn[name]((ctypes.c_int64 * len(dims))(*dims), _address(x), _address(y))
    return y


def _pool_halves(x, y, dims: tuple) -> bool:
    """Max-pool float32 `x` into `y` (`dims`: the geometry, planes first) as two halves of planes at once
    (the library's pooling on a range of planes, eager_kernels.py); False when not done (other dtypes,
    fewer than POOL_SPLIT outputs, no kernels)."""
    if x.dtype != np.float32 or y.size < POOL_SPLIT or dims[0] < 2:
        return False
    from . import eager_pointwise
    kernels = eager_pointwise.kernels()
    if kernels is None:
        return False
    kernels.launch("tscript_eager_max_pool2d_part_f32", (x, y), dims, dims[0], 1, y.size // dims[0])
    return True


def window_sums2d(x, kernel, stride, padding, out):
    """The sum of each window of (N, C, H, W) float `x` (zero padding; the normalised arguments
    `ops/conv.py` checked): avg_pool2d before its division, by the depthwise kernel with weights 1
    (the taps added in the reference's order). None when not covered: ceil-mode windows reaching
    past the padding, and rows of fewer than MIN_POOL_ROW outputs."""
    lib = functions()
    name = f"tscript_depthwise2d_{_suffix(x.dtype)}"
    if lib is None or name not in lib.fn or x.ndim != 4 or 0 in x.shape or out[1] < MIN_POOL_ROW:
        return None
    (n, c, h, w), (kh, kw) = x.shape, kernel
    if any((o - 1) * s + k > size + 2 * p for o, s, k, size, p in zip(out, stride, kernel, (h, w), padding)):
        return None
    y = np.empty((n, c) + tuple(out), x.dtype)
    dims = (1, h, w, kh, kw) + tuple(stride) + tuple(padding) + (1, 1) + tuple(out) + (n, 1, kh * kw,
                                                                                        out[0] * out[1], c, 0, 0)
    _depthwise(lib, np.ascontiguousarray(x), np.ones((c, 1, kh, kw), x.dtype), None, dims, y)
    return y


# -- helpers ------------------------------------------------------------------------------------

def _suffix(dtype) -> str:
    return {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}.get(np.dtype(dtype), "")


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _scratch(col_floats: int, pack_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """Column and GEMM packing buffers of at least the sizes asked for: this thread's, kept between
    calls, but for columns of more than KEPT_COLUMNS bytes (fresh ones, not kept)."""
    kept = getattr(_local, "buffers", None) or (np.empty(0, np.float32), np.empty(0, np.uint8))
    col = kept[0] if kept[0].size >= col_floats else np.empty(col_floats, np.float32)
    pack = kept[1] if kept[1].size >= pack_bytes else np.empty(pack_bytes, np.uint8)
    _local.buffers = (col if col.nbytes <= KEPT_COLUMNS else kept[0], pack)
    return col, pack
