"""Frontends: tracing (tracer, modules, traced_int) and scripting (script/) turn Python into tscript IR."""
