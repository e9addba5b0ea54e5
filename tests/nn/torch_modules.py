"""A tscript module beside PyTorch's of the same name and arguments, for the nn oracle tests."""
import tscript as ts
from tscript import nn


def ours_and_theirs(oracle, name: str, args, kwargs) -> tuple:
    """nn.<name>(*args, **kwargs) from tscript and from PyTorch (`oracle`): same repr and parameter
    names checked, ours loaded with PyTorch's state."""
    theirs = getattr(oracle.nn, name)(*args, **kwargs)
    ours = getattr(nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    assert [k for k, _ in ours.named_parameters()] == [k for k, _ in theirs.named_parameters()]
    ours.load_state_dict({k: ts.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs
