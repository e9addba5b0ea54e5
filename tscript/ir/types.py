"""IR types. The type language of graphs is the graph document's, so it lives with the runtime that
validates documents (tscript_runtime/types.py); the compiler uses the very same classes."""
from tscript_runtime.types import *  # noqa: F401,F403
