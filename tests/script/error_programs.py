"""Programs `tscript.jit.script` must refuse. The line each error points at carries the comment
`# error`; test_errors.py checks the file, line, column and message of the CompileError."""
from __future__ import annotations

from typing import List, Optional

import tscript as ts
from tscript import Tensor, nn

UNSUPPORTED_OBJECT = object()


def unknown_name(x: Tensor) -> Tensor:
    return x + undefined_thing  # error # noqa: F821


def try_block(x: Tensor) -> Tensor:
    try:  # error
        x = x + 1
    except ValueError:
        pass
    return x


def with_block(x: Tensor) -> Tensor:
    with ts.no_grad():  # error
        x = x + 1
    return x


def class_definition(x: Tensor) -> Tensor:
    class Inner:  # error
        pass
    return x


def import_inside(x: Tensor) -> Tensor:
    import math  # error
    return x * math.pi


def global_statement(x: Tensor) -> Tensor:
    global UNSUPPORTED_OBJECT  # error
    return x


def del_statement(x: Tensor) -> Tensor:
    y = x + 1
    del y  # error
    return x


def yield_statement(x: Tensor):
    yield x  # error


def set_literal(x: Tensor) -> Tensor:
    s = {1, 2}  # error
    return x


def star_arguments(x: Tensor, sizes: List[int]) -> Tensor:
    return x.view(*sizes)  # error


def nested_function(x: Tensor) -> Tensor:
    def inner(y):  # error
        return y
    return inner(x)


def wrong_argument_type(x: Tensor) -> Tensor:
    return x.sum(dim="rows")  # error


def wrong_keyword(x: Tensor) -> Tensor:
    return ts.cat([x, x], axis=0)  # error


def branch_type_mismatch(x: Tensor, flag: bool):
    if flag:  # error
        y = x
    else:
        y = 1
    return y


def one_branch_only(x: Tensor, flag: bool) -> Tensor:
    if flag:
        z = x * 2
    return z  # error


def loop_type_change(n: int) -> int:
    v = 0
    for i in range(n):  # error
        v = "text"
    return 0


def return_type_mismatch(x: Tensor) -> int:
    return x  # error


def int_plus_string(n: int) -> str:
    return n + "a"  # error


def not_callable(x: Tensor) -> Tensor:
    return x(1)  # error


def tensor_no_attribute(x: Tensor) -> Tensor:
    return x.frobnicate()  # error


def optional_unrefined(x: Tensor, y: Optional[Tensor]) -> Tensor:
    return x + y.sum()  # error


def list_index_type(xs: List[int]) -> int:
    return xs["first"]  # error


def bad_annotation(x: Tensor, n: complex) -> Tensor:  # error
    return x


def list_item_type(x: Tensor) -> List[Tensor]:
    out = []
    out.append(1)  # error
    return out


def range_of_float(x: Tensor) -> Tensor:
    for i in range(2.5):  # error
        x = x + i
    return x


def loop_else(n: int) -> int:
    for i in range(n):  # error
        pass
    else:
        n = 0
    return n


def attribute_assignment(x: Tensor) -> Tensor:
    x.data = x + 1  # error
    return x


def python_object(x: Tensor) -> Tensor:
    return x + UNSUPPORTED_OBJECT  # error


def print_call(x: Tensor) -> Tensor:
    print(x)  # error
    return x


def recursive(n: int) -> int:
    if n <= 1:
        return 1
    return n * recursive(n - 1)  # error


def missing_argument(x: Tensor) -> Tensor:
    return helper(x)  # error


def helper(x: Tensor, y: Tensor) -> Tensor:
    return x + y


def tuple_index_out_of_range(x: Tensor) -> Tensor:
    t = (x, x)
    return t[2]  # error


class UnrollNeedsConstant(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)])

    def forward(self, x: Tensor, k: int) -> Tensor:
        return self.layers[k](x)  # error


class MissingAttribute(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        return x * self.scale  # error


class SetsAttribute(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        self.last = x  # error
        return x


# -- generators: refused wherever the `yield` stands (Python makes the whole function a generator) --
def yield_after_return(x: Tensor) -> Tensor:
    return x
    yield x  # error


def yield_in_dead_branch(x: Tensor) -> Tensor:
    if False:
        yield x  # error
    return x


def yield_expression(x: Tensor):
    y = yield x  # error
    return y


def yield_from(x: Tensor):
    yield from [x]  # error


async def async_function(x: Tensor) -> Tensor:  # error
    return x


# -- the limits of constant folding (limits.py) -----------------------------------------------------
def power_tower(n: int) -> int:
    return n + 9 ** 9 ** 9  # error


def repeated_tuple(x: Tensor):
    return (x,) * 99999999999  # error


def overflowing_tuple(x: Tensor):
    return (x,) * 10 ** 40  # error


def repeated_string(n: int) -> str:
    return "ab" * 10 ** 9  # error


def wide_format(n: int) -> str:
    return f"{1:>1000000000}"  # error


def huge_range(n: int) -> int:
    for i in range(10 ** 30):  # error
        n += i
    return n


class UnrollsTooMuch(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)])

    def forward(self, x: Tensor) -> Tensor:
        for i in range(100000):  # error
            x = self.layers[i](x)
        return x


# -- constants Python cannot combine (found by fuzzing: they raised TypeError while compiling) --------
def invert_float(n: int) -> float:
    return n + ~0.5  # error


def compare_tuple_to_float(n: int) -> bool:
    return (1, 2) < 1.5  # error


def max_of_tuple_and_float(n: int) -> float:
    return max((1, 2), 1.5)  # error


def enumerate_from_string(xs: List[int]) -> int:
    n = 0
    for i, v in enumerate(xs, "a"):  # error
        n += v
    return n
