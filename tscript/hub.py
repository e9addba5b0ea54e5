"""tscript.hub: downloading pretrained weights, as `torch.hub` (`load_state_dict_from_url`, `get_dir`,
`download_url_to_file`). Checkpoints are cached where PyTorch caches them (`$TORCH_HOME/hub/checkpoints`)
and read with `tscript.load`, which reads PyTorch's checkpoint format without running code.
Loading a model's code from a GitHub repository (`torch.hub.load`) is not offered.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
from urllib.parse import urlparse

__all__ = ["HASH_REGEX", "download_url_to_file", "get_dir", "load_state_dict_from_url", "set_dir", "urlparse"]

HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")  # the sha256 prefix in names like resnet18-5c106cde.pth
_hub_dir: str | None = None


def _get_torch_home() -> str:
    """`$TORCH_HOME`, else `$XDG_CACHE_HOME/torch`, else `~/.cache/torch` (PyTorch's cache, shared with it)."""
    cache = os.getenv("XDG_CACHE_HOME", os.path.join("~", ".cache"))
    return os.path.expanduser(os.getenv("TORCH_HOME", os.path.join(cache, "torch")))


def get_dir() -> str:
    """The cache directory: `set_dir`'s, else `$TORCH_HOME/hub`."""
    return _hub_dir if _hub_dir is not None else os.path.join(_get_torch_home(), "hub")


def set_dir(d) -> None:
    """Use `d` as the cache directory."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None, progress: bool = True) -> None:
    """Download `url` to `dst` (through a temporary file in the same directory, renamed at the end); with
    `hash_prefix`, the file's sha256 must start with it (RuntimeError otherwise, nothing written)."""
    import urllib.request  # only when downloading: it brings in ssl
    dst = os.path.expanduser(dst)
    folder = os.path.dirname(os.path.abspath(dst))
    digest = hashlib.sha256()
    with tempfile.NamedTemporaryFile(delete=False, dir=folder) as tmp:
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers={"User-Agent": "tscript.hub"})) as u:
                while chunk := u.read(1 << 20):
                    tmp.write(chunk)
                    digest.update(chunk)
            tmp.close()
            if hash_prefix is not None and not digest.hexdigest().startswith(hash_prefix):
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest.hexdigest()}")')
            shutil.move(tmp.name, dst)
        finally:
            tmp.close()
            if os.path.exists(tmp.name):
                os.remove(tmp.name)


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location=None, progress: bool = True,
                             check_hash: bool = False, file_name: str | None = None, weights_only: bool = False):
    """The object saved at `url` (a state dict), downloaded once into `model_dir` (default
    `get_dir()/checkpoints`) and read with `tscript.load`; `check_hash` checks the sha256 prefix in its name."""
    from . import load  # the package root's: reads tscript and PyTorch checkpoint files
    model_dir = model_dir if model_dir is not None else os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        if progress:
            sys.stderr.write(f'Downloading: "{url}" to {cached_file}\n')
        match = HASH_REGEX.search(filename) if check_hash else None
        download_url_to_file(url, cached_file, match.group(1) if match else None, progress=progress)
    return load(cached_file, map_location=map_location, weights_only=weights_only)
