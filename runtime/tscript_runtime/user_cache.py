"""The per-user directory tscript keeps derived files in: the runtime's emitted object code
(native/cache.py) and the script parser's grammar tables. Never anything a model file supplies."""
from __future__ import annotations

import os


def cache_dir() -> str:
    """TSCRIPT_CACHE_DIR, default ~/.cache/tscript."""
    return os.environ.get("TSCRIPT_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "tscript")
