"""The packed GEMM's epilogue (`tscript_sgemm_epilogue_f32`): it is called once on every block of C,
the blocks tile C exactly, each holds its final product when called (after the last step of K), what it
writes is what C ends with, on one thread and split over two, with K in one block or several; an empty
K calls it on all of C; with a null epilogue the result is bit for bit `tscript_sgemm_f32`'s."""
import ctypes

import numpy as np
import pytest

from tscript_runtime.native import library
from tscript_runtime.native.library.blocking import pack_bytes
from tscript_runtime.native.library.packed_gemm import EPILOGUE_NAME, NAME

from tests.codegen.epilogue_check import EPILOGUE as _EPILOGUE, BlockCheck

NO_TRANS = 111
_ARGS = [ctypes.c_int32, ctypes.c_int32, *[ctypes.c_int64] * 3, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
         ctypes.c_int64, ctypes.c_float, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p]
_PLAIN = ctypes.CFUNCTYPE(None, *_ARGS)
_WITH_EPILOGUE = ctypes.CFUNCTYPE(None, *_ARGS, ctypes.c_void_p, ctypes.c_void_p)


@pytest.fixture(scope="module")
def gemms():
    library.parallel2()  # start the worker: big products run their halves on two threads
    found = library.addresses()
    return _PLAIN(found[NAME]), _WITH_EPILOGUE(found[EPILOGUE_NAME])


def _product(gemm, a, b, c, *epilogue):
    m, k = a.shape
    n = b.shape[1]
    scratch = np.zeros(pack_bytes(m, n, k), np.uint8)
    gemm(NO_TRANS, NO_TRANS, m, n, k, a.ctypes.data, k, b.ctypes.data, n, 0.0, c.ctypes.data, n,
         scratch.ctypes.data, *epilogue)


@pytest.mark.parametrize("m, n, k", [(13, 150, 300), (6, 64, 5), (64, 600, 300), (100, 40, 520), (7, 3, 1)])
def test_epilogue_sees_each_final_block_once(gemms, m, n, k):
    _, gemm = gemms
    rng = np.random.default_rng(m + n + k)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    check = BlockCheck(np.full((m, n), np.nan, np.float32), expected)
    _product(gemm, a, b, check.c, check.callback, None)
    check.verify()


def test_empty_k_calls_the_epilogue_on_all_of_c(gemms):
    _, gemm = gemms
    c = np.full((5, 9), 7.0, np.float32)
    calls = []
    callback = _EPILOGUE(lambda context, block, rows, cols, ldc: calls.append((rows, cols, ldc)))
    _product(gemm, np.zeros((5, 0), np.float32), np.zeros((0, 9), np.float32), c, ctypes.cast(callback, ctypes.c_void_p),
             None)
    assert calls == [(5, 9, 9)] and (c == 0).all()


@pytest.mark.parametrize("m, n, k", [(13, 150, 300), (64, 600, 300), (200, 33, 70)])
def test_null_epilogue_is_the_plain_gemm_bit_for_bit(gemms, m, n, k):
    plain, with_epilogue = gemms
    rng = np.random.default_rng(k)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    c1, c2 = np.empty((m, n), np.float32), np.empty((m, n), np.float32)
    _product(plain, a, b, c1)
    _product(with_epilogue, a, b, c2, None, None)
    assert np.array_equal(c1, c2)
