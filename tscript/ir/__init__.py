"""The SSA IR (DESIGN.md "The IR"): graphs, types, printing and parsing."""
from .graph import Block, Graph, Node, Use, Value
from .types import (DictType, ListType, ModuleType, OptionalType, ScalarType, TensorType, TupleType, Type,
                    tensor_type)

__all__ = ["Block", "DictType", "Graph", "ListType", "ModuleType", "Node", "OptionalType", "ScalarType",
           "TensorType", "TupleType", "Type", "Use", "Value", "tensor_type"]
