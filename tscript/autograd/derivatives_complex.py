"""Derivative rows of the complex ops (same table and conventions as derivatives.py). Gradients of
complex values follow PyTorch's convention (the conjugate Wirtinger derivative): for a real loss, the
gradient of z = a + ib is dL/da + i dL/db; a real input's gradient is the real part of what flows
back to it (the engine takes it)."""
from .derivatives import call, derivative


@derivative("aten::view_as_real")
def _view_as_real(grad):
    return call("aten::view_as_complex", grad.contiguous())


@derivative("aten::view_as_complex")
def _view_as_complex(grad):
    return call("aten::view_as_real", grad)


@derivative("aten::real")
def _real(grad, self):
    return grad.to(self.dtype) if self.is_complex() else grad


@derivative("aten::imag")
def _imag(grad):
    return call("aten::complex", call("aten::zeros_like", grad), grad)


@derivative("aten::conj")
def _conj(grad):
    return grad.conj()


@derivative("aten::complex")
def _complex(grad):
    return grad.real, grad.imag


@derivative("aten::polar", save_if={"result": ("abs", "angle")})
def _polar(grad, angle, result):
    """z = abs e^(i angle): d abs = Re(conj(g) e^(i angle)), d angle = Re(conj(g) i z)."""
    g_re, g_im = grad.real, grad.imag
    return g_re * angle.cos() + g_im * angle.sin(), g_im * result.real - g_re * result.imag
