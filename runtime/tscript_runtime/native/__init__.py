"""The native emitter: from a validated graph and its native plan to code running in this process.

    lowering.py, mathlib.py     pointwise ops as scalar LLVM code (inline polynomial transcendentals)
    pointwise.py, row.py,       kernel templates: fusion groups, row groups (last-dim reductions),
    tiles.py                    tiled walks of transposed inputs
    entry.py                    the whole-graph entry: every step of a graph in one native call
    library/                    GEMMs, im2col, pooling and the two-thread worker, built once per process
    emit.py                     graph + plan -> one LLVM module -> object code (cached) -> linked code
    target.py, link.py, cache.py  the host TargetMachine, ORC linking, the per-user object cache

Nothing here compiles or links code that came from a file: every function is generated from the
graph and plan after they were checked (native_plan.py). Importing this package needs no llvmlite.
"""
