"""Dtype conversion methods in scripted code: .half(), .bfloat16(), .byte(), .char(), .short(),
.cfloat(), .cdouble() give what eager gives."""
import numpy as np
import pytest

import tscript as ts


class Conversions(ts.nn.Module):
    def forward(self, x):
        narrow = x.half().float() + x.bfloat16().float()
        ints = x.byte().float() + x.short().float() + x.char().float()
        return narrow, ints, x.cfloat(), x.cdouble()


@pytest.mark.parametrize("values", [[1.3, 2.7, -0.2, 100.0], [0.0, 3.14159, 65.5, -7.9]])
def test_conversions_script_like_eager(values):
    x = ts.tensor(values)
    got, want = ts.jit.script(Conversions())(x), Conversions()(x)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    assert got[2].dtype == ts.complex64 and got[3].dtype == ts.complex128
