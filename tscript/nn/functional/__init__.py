"""tscript.nn.functional: the functional forms of the layers, written with tensor ops. Each family
file lists its public names in `__all__`."""
from .activation import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .conv_nd import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .misc import *  # noqa: F401,F403
from .norm import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pixel_shuffle import *  # noqa: F401,F403
from .sampling import *  # noqa: F401,F403
