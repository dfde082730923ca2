"""Binder: repo2docker's conventions, and notebooks attaching to the stack the start script launched.

A full build needs docker; `pip install jupyter-repo2docker && repo2docker --no-build --debug .`
prints the build plan (Python 3.11, the JRE from apt.txt, binder/requirements.txt after the
repository is copied, binder/start as the entrypoint).
"""

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BINDER = ROOT / "binder"


def test_runtime_meets_the_packages_python_requirement():
    runtime = (BINDER / "runtime.txt").read_text().strip()
    major, minor = map(int, re.fullmatch(r"python-(\d+)\.(\d+)", runtime).groups())
    required = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    need = tuple(map(int, re.fullmatch(r">=(\d+)\.(\d+)", required).groups()))
    assert (major, minor) >= need
    assert "openjdk-17-jre-headless" in (BINDER / "apt.txt").read_text().split()
    assert os.access(BINDER / "start", os.X_OK)


# Each tutorial's setup cells (before its first query: the extension, the stack, the records it
# writes) run in a kernel attached to the start script's stack, as on Binder.
SETUP_CELLS = f"""
import glob, nbformat, re
for path in sorted(glob.glob({str(ROOT / "notebooks" / "*.ipynb")!r})):
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        if re.search(r"%%?kstream\\b(?!_local)|\\.sql\\(", cell.source):
            break
        ip.run_cell(cell.source).raise_error()
    print("set up", path.rsplit("/", 1)[-1])
"""


def test_start_script_launches_the_stack_that_kstream_local_start_attaches_to(tmp_path):
    state = tmp_path / "local.json"
    env = dict(os.environ, KAFKASQL_LOCAL_STATE=str(state), HOME=str(tmp_path),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    kernel = ("from IPython.core.interactiveshell import InteractiveShell\n"
              "from IPython.utils.capture import capture_output\n"
              "from kafkasql_magic.local import stack\n"
              "ip = InteractiveShell.instance(); ip.run_line_magic('load_ext', 'kafkasql_magic')\n"
              "with capture_output() as out: ip.run_line_magic('kstream_local', 'start')\n"
              "assert stack.default() is None, 'started a second stack'\n"
              "print(out.stdout)\n"
              f"{SETUP_CELLS}")
    try:
        done = subprocess.run([str(BINDER / "start"), sys.executable, "-c", kernel], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        endpoints = json.loads(state.read_text())["endpoints"]
        assert f"bootstrap.servers={endpoints['bootstrap.servers']}" in done.stdout
        assert done.stdout.count("set up ") == len(list((ROOT / "notebooks").glob("*.ipynb")))
    finally:
        subprocess.run([sys.executable, "-m", "kafkasql_magic.local", "down"], env=env, timeout=60)
