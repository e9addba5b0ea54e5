"""Compiling in child processes (native/child_builds.py): a child that fails, dies or hangs costs only
time — the parent finds nothing in the cache and compiles the code itself; a forked process does not
wait for its parent's children."""
import os

import pytest

from tscript_runtime.native import child_builds
from tscript_runtime.native.cache import lookup
from tscript_runtime.native.library import parts


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TSCRIPT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TSCRIPT_BUILD_PROCESSES", "1")
    return tmp_path


def test_a_failing_child_leaves_the_work_to_the_parent(fresh_cache):
    key = parts.key("unary_f32")
    child_builds._start([key], ["import sys; sys.exit(3)"], None)
    assert child_builds.building(key)
    assert child_builds.wait_for(key) and not child_builds.building(key)
    assert lookup(key) is None
    obj, _ = parts.object_of("unary_f32")  # compiled here
    assert obj[:4] == b"\x7fELF" and lookup(key) is not None


def test_a_hanging_child_is_stopped(fresh_cache, monkeypatch):
    monkeypatch.setattr(child_builds, "WAIT_SECONDS", 0.5)
    child_builds._start(["hung"], ["import time; time.sleep(60)"], None)
    (child,) = [c for k, c in child_builds._building.items() if k == "hung"]
    assert child_builds.wait_for("hung")
    assert child.returncode is not None and child.returncode < 0  # killed


def test_a_child_compiles_a_module_from_its_ir(fresh_cache):
    text = "define i64 @seven() {\n  ret i64 7\n}\n"
    child_builds.build_object("seven", text, set())
    assert child_builds.wait_for("seven")
    obj, imports = lookup("seven")
    assert obj[:4] == b"\x7fELF" and imports == set()


def test_disabled(fresh_cache, monkeypatch):
    monkeypatch.setenv("TSCRIPT_BUILD_PROCESSES", "0")
    child_builds.build_object("nothing", "", set())
    assert not child_builds.building("nothing") and not child_builds.wait_for("nothing")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_process_forgets_the_children(fresh_cache):
    child_builds._start(["slow"], ["import time; time.sleep(2)"], None)
    pid = os.fork()
    if pid == 0:
        os._exit(0 if not child_builds.building("slow") else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    child_builds.wait_for("slow")


def test_the_parent_wakes_when_the_child_exits(fresh_cache):
    """Through the child's pidfd, not Popen.wait's polling (sleeps of up to 50 ms); a child already
    reaped (busy() polls) has none, and is waited for as before."""
    child_builds._start(["quick"], ["import time; time.sleep(0.3)"], None)
    (child,) = [c for k, c in child_builds._building.items() if k == "quick"]
    exited = child_builds._exit_signal(child)
    assert exited is not None or not hasattr(os, "pidfd_open")
    if exited is not None:
        os.close(exited)
    assert child_builds.wait_for("quick") and child.returncode == 0
    child_builds._start(["reaped"], ["pass"], None)
    (child,) = [c for k, c in child_builds._building.items() if k == "reaped"]
    child.wait()
    assert child_builds._exit_signal(child) is None
    assert child_builds.wait_for("reaped") and not child_builds.building("reaped")
