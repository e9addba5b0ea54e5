"""tscript.jit.annotations: the typing names TorchScript code imports from `torch.jit.annotations`."""
from typing import Any, Callable, Dict, List, Optional, Tuple, Union  # noqa: F401  (re-exported)

__all__ = ["Any", "Callable", "Dict", "List", "Optional", "Tuple", "Union"]
