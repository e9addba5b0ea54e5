"""The host's TargetMachine (its CPU and every feature, O3) and LLVM IR -> optimized object code. All
llvmlite binding calls go through one lock: LLVM's global state is not thread-safe across them."""
from __future__ import annotations

import threading

LLVM_LOCK = threading.Lock()  # held around every llvmlite binding call that touches LLVM's state
_state: dict = {}


def binding():
    """llvmlite.binding with the native target initialized (once)."""
    import llvmlite.binding as llvm
    if "init" not in _state:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        llvm.initialize_native_asmparser()
        _state["init"] = True
    return llvm


def host() -> dict:
    """The host's target triple, CPU name and features (what object code is built for), as LLVM names
    them; remembered in the cache directory under the CPU's identity, so that a warm load (every
    object in the cache) does not start LLVM only to learn them (host_identity.py)."""
    if "host" not in _state:
        from . import host_identity
        found = host_identity.remembered()
        if found is None:
            llvm = binding()
            found = {"triple": llvm.get_default_triple(), "cpu": llvm.get_host_cpu_name(),
                     "features": llvm.get_host_cpu_features().flatten()}
            host_identity.remember(found)
        _state["host"] = found
    return _state["host"]


def target_machine():
    """The one TargetMachine for the host CPU (all its features, O3)."""
    llvm = binding()
    if "tm" not in _state:
        h = host()
        target = llvm.Target.from_default_triple()
        _state["tm"] = target.create_target_machine(cpu=h["cpu"], features=h["features"], opt=3, reloc="pic",
                                                    codemodel="default", jit=True)
    return _state["tm"]


def _optimized_module(ll_text: str):
    """Parse, verify and optimize (O3 with loop and SLP vectorization) for the host; call under LLVM_LOCK."""
    llvm = binding()
    tm = target_machine()
    module = llvm.parse_assembly(ll_text)
    module.triple, module.data_layout = tm.triple, str(tm.target_data)
    module.verify()
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = pto.slp_vectorization = True
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    try:
        mpm.run(module, pb)
    finally:
        # llvmlite never frees a ModulePassManager (ObjectRef's no-op _dispose comes before
        # NewPassManager's in its MRO): ~110 KB of passes and their state per module, so free it here.
        llvm.ffi.lib.LLVMPY_DisposeNewModulePassManger(mpm)
        mpm.detach()
    return module


def optimize_and_emit(ll_text: str) -> bytes:
    """Object code for the host from LLVM IR text (optimized as `_optimized_module`)."""
    with LLVM_LOCK:
        return target_machine().emit_object(_optimized_module(ll_text))


def optimized_ir(ll_text: str) -> str:
    """The IR after optimization (for inspecting whether a kernel vectorized)."""
    with LLVM_LOCK:
        return str(_optimized_module(ll_text))


def assembly(ll_text: str) -> str:
    """The host assembly of the optimized IR (to check vectorization)."""
    with LLVM_LOCK:
        return target_machine().emit_assembly(_optimized_module(ll_text))


def optimized_ir_and_assembly(ll_text: str) -> tuple[str, str]:
    """The optimized IR and the host assembly of `ll_text`, optimizing once (for the report)."""
    with LLVM_LOCK:
        module = _optimized_module(ll_text)
        return str(module), target_machine().emit_assembly(module)
