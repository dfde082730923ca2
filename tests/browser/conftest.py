"""A real JupyterLab on a loopback port with a token, driven by Debian's Chromium through Playwright.

Skipped (with the reason) when Chromium or Playwright is missing: `apt-get install chromium` and
`pip install -e '.[browser]'`. Screenshots of a failing test go to `tests/browser/screenshots/`.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("KAFKASQL_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = Path(__file__).parent / "screenshots"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


def _missing() -> str | None:
    if not os.access(CHROMIUM, os.X_OK):
        return f"no Chromium at {CHROMIUM} (apt-get install chromium, or set KAFKASQL_CHROMIUM)"
    for module in ("playwright", "jupyterlab"):
        try:
            __import__(module)
        except ImportError:
            return f"no {module} (pip install -e '.[browser]')"
    return None


def pytest_collection_modifyitems(config, items):
    reason = _missing()
    if reason:
        for item in items:
            item.add_marker(pytest.mark.skip(reason=f"browser test skipped: {reason}"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """A JupyterLab server whose kernels run this checkout: yields (base_url, token, notebook_dir)."""
    workdir = tmp_path_factory.mktemp("lab")
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["JUPYTER_CONFIG_DIR"] = str(workdir / ".jupyter")  # no user settings leak in
    env["KAFKASQL_LOCAL_STATE"] = str(workdir / "local.json")  # never attach to a stack outside the test
    log = open(workdir / "lab.log", "wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ip=127.0.0.1", f"--port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={workdir}",
         "--LabApp.news_url=", "--LabServerApp.announcements_url=", "--ServerApp.disable_check_xsrf=False"],
        env=env, cwd=workdir, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=1)
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"JupyterLab did not start; see {workdir / 'lab.log'}")
            time.sleep(0.3)
    try:
        yield base, token, workdir
    finally:
        server.terminate()
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser, request):
    context = browser.new_context(viewport={"width": 1400, "height": 1000},
                                  permissions=["clipboard-read", "clipboard-write"])
    page = context.new_page()
    yield page
    failed = getattr(request.node, "failed_call", False)
    if failed:
        SCREENSHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"{request.node.name}.png"), full_page=True)
    context.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        item.failed_call = True


def copy_notebook(src: Path, workdir: Path) -> str:
    shutil.copy(src, workdir / src.name)
    return src.name
