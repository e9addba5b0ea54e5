"""What compile(..., backward=True) refuses: a CompileError (tscript.jit.CompileError) naming the
node and the user's line, never a wrong gradient."""
import pytest

import tscript as ts
from tscript import nn


def loop(x):
    y = x
    while bool(y.sum() < 10.0):
        y = y * 2.0
    return y


@ts.jit.ignore
def helper(x):
    return x * 2


class CallsPython(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        return helper(self.fc(x))


def writes_a_view(x):
    y = x * 2
    y[0].mul_(3)
    return y.sum()


def returns_a_dict(x):
    return {"a": x * 2}


CASES = {
    "loop": (lambda: ts.jit.script(loop), r"prim::Loop \(at test_errors.py:\d+\): a loop that was not unrolled"),
    "python": (lambda: ts.jit.script(CallsPython()), r"prim::PythonOp .*'tests.autodiff.test_errors.helper' "
                                                       r"\(marked @tscript.jit.ignore\)"),
    "in place": (lambda: writes_a_view, r"aten::mul_ \(at test_errors.py:\d+\): it writes in place into %\w+, "
                                        r"which gradients flow through"),
    "dict": (lambda: returns_a_dict, r"prim::DictConstruct .*returning a dict"),
}


@pytest.mark.filterwarnings("ignore::tscript.jit.TracerWarning")
@pytest.mark.parametrize("case", CASES)
def test_unsupported_constructs_raise_a_compile_error_naming_the_node(case):
    make, message = CASES[case]
    with pytest.raises(ts.jit.CompileError, match=message):
        ts.jit.compile(make(), ts.randn(2, 3, requires_grad=True), backward=True)


def test_a_branch_that_could_not_run_on_the_example_raises_when_taken():
    class Reshapes(nn.Module):
        def forward(self, x):
            if bool(x.sum() > 0):
                y = x * 2.0
            else:
                y = x.reshape(3, -1).sum(0).sum() * x  # 3 must divide x.numel(): not at batch 5
            return y

    compiled = ts.jit.compile(ts.jit.script(Reshapes()), ts.randn(5, 4).abs(), backward=True, dynamic={0: [0]})
    x = -ts.randn(6, 4).abs().requires_grad_()
    out = compiled(x)
    with pytest.raises(RuntimeError, match="the backward of this branch of the prim::If at test_errors.py:\\d+ "
                                           "was not compiled"):
        out.sum().backward()
