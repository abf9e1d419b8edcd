"""The rule behind ``pytest -m "not lab"``: what needs root is marked ``lab``, by what it uses.

conftest.py marks each test whose fixtures reach ``as_root``. Two checks hold that to what the tests do: a cheap one
in every run (a test or fixture that brings up a lab, injects a fault or enters a lab host's namespace asks for
``as_root``, read from its source), and the real one, which needs root to become another user: the unit part run
as an unprivileged user, on a copy of the checkout, with no lab: it must pass whole."""

from __future__ import annotations

import ast
import inspect
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest
import tomllib

from .helpers import REPO

# Calls that need root, whoever makes them: a lab or its Slurm brought up or down, a fault injected or healed (methods
# of the lab: their receiver names a lab or its Slurm), a command run inside a lab host's namespaces or a mount
# namespace; and every helper of labtools.py that makes one of those (found, not listed: see _root_helpers).
LAB_METHODS = {"up", "down", "fault", "heal"}
ROOT_COMMANDS = {"nsenter", "unshare", "ip netns"}


def _calls_needing_root(func: Any, helpers: frozenset[str] = frozenset()) -> list[str]:
    """The calls in ``func``'s own body that need root: the primitives above, or a call of one of ``helpers``."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in LAB_METHODS:
            receiver = ast.unparse(node.func.value).lower()
            if "lab" in receiver or "slurm" in receiver:
                found.append(f"{ast.unparse(node.func)}() at line {node.lineno}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in helpers:
            found.append(f"{node.func.id}() at line {node.lineno}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if any(node.value == c or node.value.startswith(c + " ") for c in ROOT_COMMANDS):
                found.append(f"{node.value!r} at line {node.lineno}")
    return found


def _root_helpers() -> frozenset[str]:
    """The functions of labtools.py that need root, directly or through one another."""
    from . import labtools

    functions = {name: f for name, f in inspect.getmembers(labtools, inspect.isfunction)
                 if f.__module__ == labtools.__name__}
    known: frozenset[str] = frozenset()
    while True:
        more = known | {name for name, f in functions.items() if _calls_needing_root(f, known)}
        if more == known:
            return known
        known = frozenset(more)


def test_every_test_that_brings_up_a_lab_or_enters_one_asks_for_as_root(request: pytest.FixtureRequest) -> None:
    """Read from the source of each test in this session and of the fixtures it uses: none that calls what needs
    root goes without ``as_root``, so none escapes the ``lab`` mark (in a ``-m "not lab"`` run: none is here)."""
    helpers = _root_helpers()
    unmarked = []
    for item in request.session.items:
        if not isinstance(item, pytest.Function) or "as_root" in item.fixturenames:
            continue
        funcs = [item.function] + [defs[-1].func for name, defs in item._fixtureinfo.name2fixturedefs.items()
                                   if defs and Path(inspect.getfile(defs[-1].func)).parent == REPO / "tests"]
        for func in funcs:
            if calls := _calls_needing_root(func, helpers):
                unmarked.append(f"{item.nodeid}: {func.__name__} calls {', '.join(calls)}")
    assert not unmarked, "ask for the as_root fixture (conftest.py), so the test is marked lab:\n" + \
                         "\n".join(sorted(set(unmarked)))


def test_the_check_above_sees_the_lab_fixtures_and_a_lab_brought_up_in_a_test() -> None:
    from . import conftest, test_device_health, test_lab_facts

    helpers = _root_helpers()
    assert {"fresh_lab", "own_lab", "provisioning_lab", "venv_cache", "install_venv"} <= helpers
    assert "lab_inventory" not in helpers and "heal_all" in helpers
    assert _calls_needing_root(conftest.lab.__wrapped__, helpers)  # type: ignore[attr-defined]
    assert _calls_needing_root(test_lab_facts.test_lab_up_is_idempotent_and_down_leaves_nothing, helpers)
    assert not _calls_needing_root(test_lab_facts.test_lab_without_root_exits_3, helpers)
    # A helper of its own named fault(), on a simulated GPU's files: no lab.
    assert not _calls_needing_root(test_device_health.test_script_warns_on_the_milder_faults, helpers)


def test_the_readmes_test_commands_name_registered_markers_and_ci_runs_the_whole_suite() -> None:
    """The README's Tests section says which command runs what: its markers are the registered ones, and .ci/run
    ends with the command it names for the whole suite."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("\n## Tests\n"):]
    section = section[:section.index("\n## ", 1)]
    registered = {line.split(":", 1)[0] for line in
                  tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]}
    expressions = re.findall(r'pytest -m "([^"]+)"', section)
    assert {"not lab", "not root"} <= set(expressions), expressions
    for expression in expressions:
        assert set(re.findall(r"[a-z_]+", expression)) - {"not", "and", "or"} <= registered, expression
    ci = [line for line in (REPO / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert ci[-1] == "python -m pytest -q" and "`python -m pytest -q` (what `bash .ci/run` ends with)" in section


def _unprivileged_user() -> str:
    """An account that is not root and owns nothing here: ``nobody`` on every Debian and Ubuntu."""
    import pwd

    user = pwd.getpwnam("nobody")
    assert user.pw_uid != 0
    return user.pw_name


@pytest.mark.xdist_group("as-user")  # beside the lab's group: it is a whole unit run of its own
def test_the_unit_part_passes_as_a_user_without_root_and_without_a_lab(as_root: None) -> None:
    """``pytest -m "not lab"`` as ``nobody``, on a copy of the checkout that user can read, with no lab: every
    test that needed root and was not marked ``lab`` fails here. The interpreter may live where that user cannot
    go (pyenv under /root): a private mount namespace then shows its folder, and nothing else of /root, to the
    run alone."""
    user = _unprivileged_user()
    work = Path(tempfile.mkdtemp(prefix="accelstack-as-user-"))  # /tmp: a folder every user can reach
    try:
        done = _run_unit_part_as(user, work)
    finally:
        subprocess.run(["rm", "-rf", str(work)], check=False)
    tail = done.stdout[-6000:] + done.stderr[-3000:]
    assert done.returncode == 0, tail
    assert " passed" in done.stdout.strip().splitlines()[-1], tail


def _run_unit_part_as(user: str, work: Path) -> subprocess.CompletedProcess[str]:
    copy, home, base = work / "checkout", work / "home", work / "base"
    files = subprocess.run(["git", "-c", "safe.directory=*", "ls-files", "-co", "--exclude-standard", "-z"],
                           cwd=REPO, capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        if (REPO / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, copy / name)
    home.mkdir()
    base.mkdir()
    os.chmod(work, 0o755)
    subprocess.run(["chown", "-R", f"{user}:", str(copy), str(home), str(base)], check=True)
    prefix = Path(sys.base_prefix).resolve()
    hidden = next((p for p in [*reversed(prefix.parents), prefix] if not os.stat(p).st_mode & 0o001), None)
    show = ""
    if hidden is not None:  # e.g. /root (0700) above the interpreter: a tmpfs over it, the prefix bound back
        keep = work / "prefix"
        keep.mkdir()
        show = (f"mount --bind {shlex.quote(str(prefix))} {keep} && mount -t tmpfs -o mode=755 tmpfs "
                f"{shlex.quote(str(hidden))} && mkdir -p {shlex.quote(str(prefix))} && "
                f"mount --bind {keep} {shlex.quote(str(prefix))} && ")
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(home),
           "LANG": "C.UTF-8", "PYTHONPATH": f"{copy / 'src'}:{copy}", "PYTHONDONTWRITEBYTECODE": "1",
           **{k: v for k, v in os.environ.items() if k.startswith("PIP_") or k == "ACCELSTACK_TEST_LAB_SALT"}}
    argv = ["runuser", "-u", user, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()),
            sys.executable, "-m", "pytest", "-q", "-x", "-m", "not lab", "-p", "no:cacheprovider",
            f"--basetemp={base / 'tmp'}"]
    return subprocess.run(["unshare", "-m", "--propagation", "private", "/bin/sh", "-c", show + "exec " +
                           shlex.join(argv)], cwd=copy, capture_output=True, text=True, timeout=540)
