"""Layers and containers. Each family file lists its public names in `__all__`."""
from .activation import *  # noqa: F401,F403
from .batchnorm import *  # noqa: F401,F403
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .instancenorm import *  # noqa: F401,F403
from .linear import Flatten, Identity, Linear, Unflatten
from .loss import *  # noqa: F401,F403
from .module import Module
from .normalization import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pixelshuffle import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from .upsampling import *  # noqa: F401,F403
