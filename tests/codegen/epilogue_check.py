"""A GEMM epilogue for tests: checks that each block it is called on is final (equal to the expected
product) and doubles it, counting how often each value of C was seen."""
import ctypes
import threading

import numpy as np

EPILOGUE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(ctypes.c_float), ctypes.c_int64, ctypes.c_int64,
                            ctypes.c_int64)


class BlockCheck:
    """`callback` (a void* for the GEMM) checks the blocks of `c` (float32, C-contiguous) against
    `expected`; `verify()` then asserts every value was seen once and C doubled."""

    def __init__(self, c: np.ndarray, expected: np.ndarray):
        self.c, self.expected = c, expected
        self.seen, self.wrong, self.lock = np.zeros(c.shape, np.int64), [], threading.Lock()
        self._callback = EPILOGUE(self._epilogue)  # kept alive while the GEMM may call it
        self.callback = ctypes.cast(self._callback, ctypes.c_void_p)

    def _epilogue(self, context, block, rows, cols, ldc):
        i, j = divmod((ctypes.addressof(block.contents) - self.c.ctypes.data) // 4, ldc)
        with self.lock:
            view = self.c[i:i + rows, j:j + cols]
            if not np.allclose(view, self.expected[i:i + rows, j:j + cols], rtol=1e-4, atol=1e-3):
                self.wrong.append((i, j, rows, cols))
            self.seen[i:i + rows, j:j + cols] += 1
            view *= 2  # (what the epilogue writes is what C keeps)

    def verify(self) -> None:
        assert not self.wrong, f"blocks called before their last step of K: {self.wrong[:3]}"
        assert (self.seen == 1).all(), "the blocks do not tile C exactly once"
        np.testing.assert_allclose(self.c, 2 * self.expected, rtol=1e-4, atol=1e-3)
