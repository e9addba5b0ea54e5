"""The SSA IR (DESIGN.md "The IR"): graphs, types, printing, parsing and verification."""
from .graph import Block, Graph, Node, Use, Value
from .parser import IRParseError, parse_ir
from .types import (DictType, ListType, ModuleType, OptionalType, ScalarType, TensorType, TupleType, Type,
                    tensor_type)
from .verify import IRVerifyError, verify

__all__ = ["Block", "DictType", "Graph", "IRParseError", "IRVerifyError", "ListType", "ModuleType", "Node",
           "OptionalType", "ScalarType", "TensorType", "TupleType", "Type", "Use", "Value", "parse_ir",
           "tensor_type", "verify"]
