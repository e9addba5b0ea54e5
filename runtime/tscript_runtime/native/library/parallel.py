"""Two-thread kernel launches in native code: one worker thread that waits in native code, spinning
for a while after each job and then sleeping on a condition variable, the way OpenMP runtimes do.
Handing half a kernel to it costs well under a microsecond while it spins (a Python thread pool
costs tens: waking a thread, taking the GIL, building a ctypes call).

    void tscript_parallel2(fn, i64* sizes1, i8** ptrs1, i64* sizes2, i8** ptrs2, i64* strides, f64* scalars)
        runs fn(sizes1, ptrs1, strides, scalars) here and fn(sizes2, ptrs2, strides, scalars) on the
        worker at the same time (both here, one after the other, while the worker is not running or
        busy with another caller's job); fn has the kernel ABI of kernel.py.
    void tscript_pool_worker()   the worker's loop; never returns (run it on a thread of its own)
    void tscript_pool_reset()    forget the worker (in a child after fork(), where it does not exist)
    void tscript_pool_hold(i32 on)   on: keep the worker for no caller (every launch then runs both
        halves on its caller's thread; waits for a job in progress to end); off: release it again

glibc's mutex and condition variable are all-zero when initialized; 64 bytes hold either.
"""
from __future__ import annotations

from llvmlite import ir

I8, I32, I64, F64 = ir.IntType(8), ir.IntType(32), ir.IntType(64), ir.DoubleType()
P8 = I8.as_pointer()
KERNEL = ir.FunctionType(ir.VoidType(), [I64.as_pointer(), P8, I64.as_pointer(), F64.as_pointer()])
SPIN_NS = 2_000_000  # how long the worker spins after a job before it sleeps
YIELD_EVERY = 16  # polls between sched_yield()s (a BLAS thread waiting for this core gets it) and clock reads
TIMESPEC = ir.LiteralStructType([I64, I64])
CLOCK_MONOTONIC = 1
IDLE, POSTED, DONE, RUNNING = 0, 1, 2, 3
PARALLEL2, WORKER, RESET, HOLD = "tscript_parallel2", "tscript_pool_worker", "tscript_pool_reset", "tscript_pool_hold"
HELD = 2  # the `owner` flag while the pool is held: no caller can take the worker (1: a caller has it)
_SYNC = ("state", "owner", "sleeping", "started")  # i32 flags
_JOB = ("fn", "sizes", "ptrs", "strides", "scalars")


def kernel_abi(module: ir.Module, name: str) -> tuple[ir.Function, bool]:
    """`name` in `module`: the function already there and False, or a new function of the kernel ABI
    (KERNEL: `void name(i64* sizes, i8* ptrs, i64* strides, f64* scalars)`, what tscript_parallel2
    runs) and True, its body to be defined by the caller."""
    try:
        return module.get_global(name), False
    except KeyError:
        return ir.Function(module, KERNEL, name), True


def define_pool(module: ir.Module) -> None:
    """Define (once per module) the pool's globals and its three functions in `module`."""
    if PARALLEL2 in module.globals:
        return
    g = _Globals(module)
    _define_parallel2(module, g)
    _define_worker(module, g)
    _define_reset(module, g)
    _define_hold(module, g)


class _Globals:
    def __init__(self, module: ir.Module):
        def var(name, typ, align):
            v = ir.GlobalVariable(module, typ, f"tscript_pool_{name}")
            v.initializer, v.align, v.linkage = ir.Constant(typ, None), align, "internal"
            return v
        for name in _SYNC:
            setattr(self, name, var(name, I32, 64))
        types = [KERNEL.as_pointer(), I64.as_pointer(), P8, I64.as_pointer(), F64.as_pointer()]
        self.job = {name: var(f"job_{name}", t, 8) for name, t in zip(_JOB, types)}
        self.mutex, self.cond = (var(name, ir.ArrayType(I8, 64), 64) for name in ("mutex", "cond"))
        sync = ir.FunctionType(I32, [P8])
        self.lock = ir.Function(module, sync, "pthread_mutex_lock")
        self.unlock = ir.Function(module, sync, "pthread_mutex_unlock")
        self.signal = ir.Function(module, sync, "pthread_cond_signal")
        self.wait = ir.Function(module, ir.FunctionType(I32, [P8, P8]), "pthread_cond_wait")
        self.pause = _pause(module)
        self.sched_yield = ir.Function(module, ir.FunctionType(I32, []), "sched_yield")
        self.clock_gettime = ir.Function(module, ir.FunctionType(I32, [I32, TIMESPEC.as_pointer()]),
                                         "clock_gettime")

    def ptr(self, b, v):
        return b.bitcast(v, P8)


def _pause(module: ir.Module):
    """The CPU's spin-wait hint as inline assembly (nothing where there is none)."""
    hint = {"x86_64": "pause", "aarch64": "yield"}.get(str(module.triple).split("-")[0], "")
    return ir.InlineAsm(ir.FunctionType(ir.VoidType(), []), hint, "~{memory}", side_effect=True)


def _store(b, value, ptr, order: str):
    b.store_atomic(value, ptr, order, 4)


def _load(b, ptr, order: str):
    return b.load_atomic(ptr, order, 4)


def _define_parallel2(module: ir.Module, g: _Globals) -> None:
    kp = KERNEL.as_pointer()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [P8, I64.as_pointer(), P8, I64.as_pointer(), P8,
                                                             I64.as_pointer(), F64.as_pointer()]), PARALLEL2)
    raw, sizes1, ptrs1, sizes2, ptrs2, strides, scalars = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    kernel = b.bitcast(raw, kp)
    alone, shared = fn.append_basic_block("alone"), fn.append_basic_block("shared")
    started = b.icmp_unsigned("!=", _load(b, g.started, "acquire"), I32(0))
    with b.if_then(started):
        took = b.extract_value(b.cmpxchg(g.owner, I32(0), I32(1), "acquire", "monotonic"), 1)
        b.cbranch(took, shared, alone)
    b.branch(alone)

    b.position_at_end(alone)  # no worker, or another thread has it: both halves here
    b.call(kernel, [sizes1, ptrs1, strides, scalars])
    b.call(kernel, [sizes2, ptrs2, strides, scalars])
    b.ret_void()

    b.position_at_end(shared)
    for name, value in zip(_JOB, (kernel, sizes2, ptrs2, strides, scalars)):
        b.store(value, g.job[name])
    _store(b, I32(POSTED), g.state, "seq_cst")
    with b.if_then(b.icmp_unsigned("!=", _load(b, g.sleeping, "seq_cst"), I32(0)), likely=False):
        b.call(g.lock, [g.ptr(b, g.mutex)])
        b.call(g.signal, [g.ptr(b, g.cond)])
        b.call(g.unlock, [g.ptr(b, g.mutex)])
    b.call(kernel, [sizes1, ptrs1, strides, scalars])
    # the worker has not taken the job yet (it was asleep): take it back rather than wait for it to wake
    back = b.extract_value(b.cmpxchg(g.state, I32(POSTED), I32(IDLE), "acq_rel", "acquire"), 1)
    with b.if_then(back):
        b.call(kernel, [sizes2, ptrs2, strides, scalars])
        _store(b, I32(0), g.owner, "release")
        b.ret_void()
    wait, done = fn.append_basic_block("wait"), fn.append_basic_block("done")
    b.branch(wait)
    b.position_at_end(wait)
    b.call(g.pause, [])
    b.cbranch(b.icmp_unsigned("==", _load(b, g.state, "acquire"), I32(DONE)), done, wait)
    b.position_at_end(done)
    _store(b, I32(IDLE), g.state, "release")
    _store(b, I32(0), g.owner, "release")
    b.ret_void()


def _define_worker(module: ir.Module, g: _Globals) -> None:
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), []), WORKER)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    clock = b.alloca(TIMESPEC)
    _store(b, I32(1), g.started, "release")
    top, spin, sleep, run = (fn.append_basic_block(n) for n in ("top", "spin", "sleep", "run"))
    b.branch(top)

    b.position_at_end(top)  # after a job: spin a while, for the next one comes soon in a hot loop
    deadline = b.add(_now_ns(b, g, clock), I64(SPIN_NS))
    b.branch(spin)
    b.position_at_end(spin)
    count = b.phi(I64)
    count.add_incoming(I64(0), top)
    posted = b.icmp_unsigned("==", _load(b, g.state, "acquire"), I32(POSTED))
    keep, now, again = (fn.append_basic_block(n) for n in ("keep", "now", "again"))
    b.cbranch(posted, run, keep)
    b.position_at_end(keep)
    b.call(g.pause, [])
    nxt = b.add(count, I64(1))
    b.cbranch(b.icmp_unsigned("==", b.and_(nxt, I64(YIELD_EVERY - 1)), I64(0)), now, again)
    b.position_at_end(now)  # now and then: let a waiting thread have this core, and look at the time
    b.call(g.sched_yield, [])
    b.cbranch(b.icmp_signed(">", _now_ns(b, g, clock), deadline), sleep, again)
    b.position_at_end(again)
    count.add_incoming(nxt, again)
    b.branch(spin)

    b.position_at_end(sleep)  # then sleep until a caller signals (it checks `sleeping` after posting)
    b.call(g.lock, [g.ptr(b, g.mutex)])
    _store(b, I32(1), g.sleeping, "seq_cst")
    check, block, woke = (fn.append_basic_block(n) for n in ("check", "block", "woke"))
    b.branch(check)
    b.position_at_end(check)
    b.cbranch(b.icmp_unsigned("==", _load(b, g.state, "seq_cst"), I32(POSTED)), woke, block)
    b.position_at_end(block)
    b.call(g.wait, [g.ptr(b, g.cond), g.ptr(b, g.mutex)])
    b.branch(check)
    b.position_at_end(woke)
    _store(b, I32(0), g.sleeping, "seq_cst")
    b.call(g.unlock, [g.ptr(b, g.mutex)])
    b.branch(run)

    b.position_at_end(run)
    claim = fn.append_basic_block("claim")
    took = b.extract_value(b.cmpxchg(g.state, I32(POSTED), I32(RUNNING), "acq_rel", "acquire"), 1)
    b.cbranch(took, claim, top)  # or the caller took its job back
    b.position_at_end(claim)
    job = {name: b.load(v) for name, v in g.job.items()}
    b.call(job["fn"], [job["sizes"], job["ptrs"], job["strides"], job["scalars"]])
    _store(b, I32(DONE), g.state, "release")
    b.branch(top)


def _now_ns(b: ir.IRBuilder, g: _Globals, timespec):
    """CLOCK_MONOTONIC in nanoseconds."""
    b.call(g.clock_gettime, [I32(CLOCK_MONOTONIC), timespec])
    seconds, nanoseconds = (b.load(b.gep(timespec, [I32(0), I32(k)])) for k in (0, 1))
    return b.add(b.mul(seconds, I64(1_000_000_000)), nanoseconds)


def _define_reset(module: ir.Module, g: _Globals) -> None:
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), []), RESET)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    for name in _SYNC:
        b.store(I32(0), getattr(g, name))
    for v in (g.mutex, g.cond):
        b.store(ir.Constant(v.value_type, None), v)
    b.ret_void()


def _define_hold(module: ir.Module, g: _Globals) -> None:
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I32]), HOLD)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    take, spin, done = (fn.append_basic_block(n) for n in ("take", "spin", "done"))
    with b.if_then(b.icmp_unsigned("==", fn.args[0], I32(0))):  # release (a no-op unless held)
        b.cmpxchg(g.owner, I32(HELD), I32(0), "acq_rel", "monotonic")
        b.ret_void()
    b.branch(take)
    b.position_at_end(take)  # take the worker from "free", as a caller would; already held is fine
    old = b.extract_value(b.cmpxchg(g.owner, I32(0), I32(HELD), "acquire", "monotonic"), 0)
    b.cbranch(b.icmp_unsigned("==", old, I32(1)), spin, done)
    b.position_at_end(spin)  # a caller's job is running: wait for it to end
    b.call(g.pause, [])
    b.branch(take)
    b.position_at_end(done)
    b.ret_void()
