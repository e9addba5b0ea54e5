"""tscript.backends: the flags of `torch.backends` on a CPU-only machine. They can be read and set
(`torch.backends.cudnn.benchmark = True`); the libraries they configure are not there, so setting
them changes nothing tscript computes."""
from . import cuda, cudnn, mkldnn, mps, opt_einsum

__all__ = ["cuda", "cudnn", "mkldnn", "mps", "opt_einsum"]
