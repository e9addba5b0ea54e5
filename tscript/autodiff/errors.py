"""What autodiff raises for a graph it cannot differentiate: `tscript.jit.CompileError` naming the
node (its kind and the user's source line), never a wrong gradient."""
from __future__ import annotations

from ..frontend.script.errors import CompileError
from ..ir.graph import Node


def unsupported(node: Node | None, reason: str) -> CompileError:
    """A CompileError saying why `node` cannot be differentiated."""
    if node is None:
        return CompileError(f"autodiff: {reason}")
    where = f" (at {node.source})" if node.source else ""
    return CompileError(f"autodiff: cannot differentiate {node.kind}{where}: {reason}")
