"""tscript.nn: modules, layers, losses and initialisation, written on the tensor API."""
from . import functional, init, parallel, utils
from .modules import *  # noqa: F401,F403
from .modules import Module, ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .parameter import Parameter
from .parallel import DataParallel
