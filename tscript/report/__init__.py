"""tscript.report: the compiler's side of the report (`tscript.jit.report`, `tscript report`): it
compiles a model with every pass recorded (passes.py), finds the source files the nodes name
(sources.py), and hands the runtime's report writer (tscript_runtime.report) the facts only the
compiler has (build.py)."""
from .build import build_report, report

__all__ = ["build_report", "report"]
