"""The runtime's code digest (part of every object-cache key: code another emitter version made is never
linked): the hash of every module's bytes, remembered in the cache directory under the files' identities
(inode, size, modification and change times), recomputed whenever one changes."""
import shutil
import subprocess
import sys
from pathlib import Path

import tscript_runtime

DIGEST = """
import sys
from tscript_runtime.native import cache
print(cache.code_digest(), cache._hash_sources(cache._sources(sys.argv[1])))
"""


def digests(site: Path, cache_dir: Path) -> tuple[str, str]:
    done = subprocess.run([sys.executable, "-c", DIGEST, str(site / "tscript_runtime")], capture_output=True,
                          text=True, env={"PYTHONPATH": str(site), "TSCRIPT_CACHE_DIR": str(cache_dir),
                                          "PATH": "/usr/bin:/bin"}, timeout=120)
    assert done.returncode == 0, done.stderr
    remembered, computed = done.stdout.split()
    return remembered, computed


def test_remembered_until_a_file_changes(tmp_path):
    site = tmp_path / "site"
    shutil.copytree(Path(tscript_runtime.__file__).parent, site / "tscript_runtime",
                    ignore=shutil.ignore_patterns("__pycache__"))
    first = digests(site, tmp_path / "cache")
    assert first[0] == first[1] and list((tmp_path / "cache").glob("code-*.sha256"))
    assert digests(site, tmp_path / "cache") == first  # from the remembered file
    module = site / "tscript_runtime" / "native" / "emit.py"
    module.write_text(module.read_text() + "\n# another emitter\n")
    changed = digests(site, tmp_path / "cache")
    assert changed[0] == changed[1] != first[0]


def test_a_damaged_remembered_digest_is_recomputed(tmp_path):
    site = tmp_path / "site"
    shutil.copytree(Path(tscript_runtime.__file__).parent, site / "tscript_runtime",
                    ignore=shutil.ignore_patterns("__pycache__"))
    first = digests(site, tmp_path / "cache")
    for f in (tmp_path / "cache").glob("code-*.sha256"):
        f.write_text("not a digest")
    assert digests(site, tmp_path / "cache") == first
