"""The reports open in a headless Chromium with no console error, and the page's script runs to its
end. Skipped where no Chromium is installed (Debian's `chromium` package provides one)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

BROWSER = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
pytestmark = pytest.mark.skipif(BROWSER is None, reason="no headless Chromium on PATH")


def open_headless(path) -> tuple[str, list]:
    """(the DOM after the page's script ran, the console messages) of the page at `path`."""
    done = subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
                           "--v=0", "--dump-dom", path.as_uri()], capture_output=True, text=True, timeout=120)
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return done.stdout, console


@pytest.mark.parametrize("name", ["mlp", "script", "resnet", "gpt"])
def test_the_report_opens_without_console_errors(reports, name):
    path, _ = reports[name]
    dom, console = open_headless(path)
    assert console == [], "\n".join(console)
    assert 'data-ready="1"' in dom, "the page's script did not run to its end"
    assert "<svg" in dom and "node-panel" in dom
