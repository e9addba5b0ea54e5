"""The packed GEMM's blocking and the size of its scratch (packed_gemm.py), without llvmlite: the call
planner sizes a product's scratch by `pack_bytes` where no code is built (a warm load of a saved model
imports no IR builder)."""
from __future__ import annotations

import math
from dataclasses import dataclass

LANES = 16  # floats in one AVX-512 register
ALIGN = 64  # bytes: packed panels start on cache lines, so the micro-kernel's loads of B are aligned


@dataclass(frozen=True)
class Blocking:
    """Register and cache blocking: MR rows x NV vectors of C in registers, K in steps of KC, columns
    in blocks of NC (packed B, KC x NC floats, stays in L2), the K loop unrolled `unroll` times."""
    mr: int = 6
    nv: int = 4
    kc: int = 256
    nc: int = 512
    unroll: int = 4
    in_place_rows: int = 128  # a row-major B is read in place under at most this many rows of C,
    in_place_floats: int = 1 << 16  # and at most this many values (256 KiB: it stays in cache; a bigger one
    #   streams from memory, one cache line per row of each panel, where a packing pass reads it row by row:
    #   1x1 convolutions of 16-32 channels on 27x27-55x55 images 0.7-0.9x the time packed)
    split_min: int = 1 << 18  # multiply-adds from which the two halves run at once (benchmarks/gemm.py)

    def __post_init__(self):
        if self.nr & (self.nr - 1) or self.nc % self.nr or self.kc % self.unroll:
            raise ValueError(f"{self}: NR must be a power of two dividing NC, and KC a multiple of the unrolling")

    @property
    def nr(self) -> int:
        return self.nv * LANES

    @property
    def a_rows(self) -> int:
        """Rows of a transposed A packed at once: whole cache lines of it read and turned around 16 x 16
        at a time, for whole MR-row blocks (48). Packed per MR rows, each block read 16 floats of a line
        for its 6 and the next block the same lines again, lines lda apart that all fall into one L1
        set: GPT's weight gradients (1024 x 1024tokens @ 1024tokens x 256) ran at 0.8x the row-major speed."""
        return math.lcm(self.mr, LANES)


BLOCKING = Blocking()


def pack_bytes(m: int, n: int, k: int, blocking: Blocking = BLOCKING) -> int:
    """Bytes of scratch `tscript_sgemm_f32` needs for an (M, N, K) product (`pack`)."""
    return 2 * 4 * _region_floats(n, k, blocking) + ALIGN


def _region_floats(n: int, k: int, blocking: Blocking) -> int:
    """Floats of one thread's packing area: B's KC x NC block, then a transposed A's A_ROWS x KC block
    (each a whole number of cache lines)."""
    kc = min(k, blocking.kc)
    nc = min(-(-n // blocking.nr) * blocking.nr, blocking.nc)
    return kc * nc + -(-kc * blocking.a_rows // LANES) * LANES
