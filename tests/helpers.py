"""What the test modules share, in one place: the checkout's paths, scripts loaded as modules (host-side
validators, benches, data tools), the real command line run as a user runs it (to the end, or started and
interrupted with Ctrl-C), its records, processes looked up in /proc, this checkout's lab tags, and the first
finding of log lines diagnosed in hand.

Lab-only helpers (a lab host's files, the CPU stack's venv on the hosts, a module's own lab) are in labtools.py;
the fixtures and the hook that marks what needs root are in conftest.py."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "src"
VALIDATORS = SRC / "accelstack" / "hostside" / "validators"
BENCH = REPO / "bench"
DATA = REPO / "tests" / "data"

# What a test's own command line keeps of this process's ACCELSTACK_* variables: where records go and which lab
# tags are this checkout's. A developer's ACCELSTACK_FORKS or ACCELSTACK_HOME must not change what a test sees.
KEPT_VARIABLES = ("ACCELSTACK_RUNS", "ACCELSTACK_TEST_LAB_SALT")


# ----- scripts loaded as modules --------------------------------------------------------------------------------

def load_script(path: Path, name: str | None = None, *, beside: bool = False) -> ModuleType:
    """A script that is a file, not a module of a package (a host-side validator, a bench, a data tool),
    imported afresh as a module so its pure parts are testable. ``beside``: its folder is on ``sys.path`` while
    it loads, for the helper module it imports from beside it."""
    spec = importlib.util.spec_from_file_location(name or f"script_{path.stem}", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass in the script looks its module up there
    folder = str(path.parent)
    added = beside and folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    finally:
        if added:
            sys.path.remove(folder)
    return module


def load_validator(name: str) -> ModuleType:
    """``hostside/validators/<name>.py`` imported as a module, so its pure parsers and judgements are testable
    (the scripts are files the hosts run, not modules of the package)."""
    return load_script(VALIDATORS / f"{name}.py", f"validator_{name}")


def load_bench(name: str) -> ModuleType:
    """``bench/<name>.py`` imported as a module (its shared helper beside it importable)."""
    return load_script(BENCH / f"{name}.py", f"bench_{name}", beside=True)


def load_vendor_hostside(vendor: str) -> ModuleType:
    """A vendor's host-side module (``vendors/<vendor>/hostside.py``), as the validators load it
    (``_common.vendor_module``): the same module object they call, so its parsers and judgements are testable."""
    if str(VALIDATORS) not in sys.path:
        sys.path.insert(0, str(VALIDATORS))
    common = importlib.import_module("_common")
    return common.vendor_module(vendor)  # type: ignore[no-any-return]


# ----- the command line, as a user runs it ------------------------------------------------------------------------

def cli_env(extra: Mapping[str, str] | None = None, runs: Path | None = None,
            base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a command line a test runs: this checkout's package first on the path (and the lab
    package beside it), records to ``runs``, ``extra`` on top; the caller's other ACCELSTACK_* knobs left out."""
    extra = dict(extra or {})
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if not k.startswith("ACCELSTACK_") or k in KEPT_VARIABLES}
    path = [str(SRC), str(REPO), *(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(path))
    if runs is not None:
        env["ACCELSTACK_RUNS"] = str(runs)
    env.update(extra)
    return env


def command(program: str, *args: str) -> list[str]:
    """The argv of ``accelstack ARGS`` (the console script's module) or ``inv ARGS``, with this interpreter."""
    assert program in ("accelstack", "inv"), program
    return [sys.executable, "-m", "accelstack" if program == "accelstack" else "invoke", *args]


def run_program(program: str, *args: str, runs: Path | None = None, env: Mapping[str, str] | None = None,
                cwd: Path | str = REPO, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``accelstack ARGS`` or ``inv ARGS`` in the checkout, run to the end as a user runs it. ``env``: variables
    on top of the test's environment (see ``cli_env``)."""
    return subprocess.run(command(program, *args), cwd=cwd, env=cli_env(env, runs), capture_output=True,
                          text=True, timeout=timeout)


def run_cli(*args: str, runs: Path | None = None, env: Mapping[str, str] | None = None,
            cwd: Path | str | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``accelstack ARGS``, the real console script's module, run to the end as a user runs it."""
    return run_program("accelstack", *args, runs=runs, env=env, cwd=cwd or REPO, timeout=timeout)


@contextmanager
def cli_process(*args: str, runs: Path, env: Mapping[str, str] | None = None,
                cwd: Path | str = REPO) -> Iterator[subprocess.Popen[str]]:
    """``accelstack ARGS`` started (this tree's package, records to ``runs``), killed on the way out if the test
    left it running."""
    proc = subprocess.Popen(command("accelstack", *args), cwd=cwd, env=cli_env(env, runs),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def records(proc: subprocess.CompletedProcess[str]) -> list[dict]:
    """The JSON records a run printed on stdout."""
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def by_host(proc: subprocess.CompletedProcess[str], check: str = "provision") -> dict[str, dict]:
    return {r["host"]: r for r in records(proc) if r["check"] == check}


def first_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stderr.strip().splitlines() or proc.stdout.strip().splitlines()
    return lines[0] if lines else ""


def assert_bad_input(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == 3, (proc.returncode, proc.stdout[-500:], proc.stderr[-1500:])
    assert "Traceback" not in proc.stderr, proc.stderr
    line = first_line(proc)
    assert line.startswith("accelstack: "), line
    for word in words:
        assert word in line, (word, line)


# ----- Ctrl-C and the processes a run leaves ------------------------------------------------------------------------

def first_results(runs: Path, timeout: float, poll: float = 0.1) -> Path:
    """The run's ``results.jsonl`` once a first record is in it."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        found = [p for p in runs.glob("*/results.jsonl") if p.stat().st_size] if runs.exists() else []
        if found:
            return found[0]
        time.sleep(poll)
    raise AssertionError(f"no record arrived in {runs} within {timeout:g} s")


def interrupt(proc: subprocess.Popen[str], timeout: float, times: int = 1) -> tuple[str, str]:
    """Ctrl-C (``times`` SIGINTs, apart so the kernel does not merge them); then the run's stdout and stderr."""
    for n in range(times):
        if n:
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
    return proc.communicate(timeout=timeout)


def assert_interrupted(proc: subprocess.Popen[str], err: str, detail: str = "") -> None:
    """Exit 130 and one line on stderr, never a traceback; ``detail``: what else a failure's message shows."""
    assert proc.returncode == 130, f"{err}{detail and '; ' + detail}"
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


def interrupted_records(proc: subprocess.Popen[str], err: str, results: Path, before: list[str],
                        detail: str = "") -> list[Any]:
    """What every Ctrl-C'd run promises: exit 130 with one line that says so, every record written before Ctrl-C
    still there, and the checks it cut short marked ``error``. Returns the run folder's records."""
    from accelstack.results.records import read_run

    assert_interrupted(proc, err, detail)
    assert err.startswith("accelstack: interrupted"), err
    after = results.read_text().splitlines()
    assert after[:len(before)] == before  # every record finished before Ctrl-C is still there
    records = read_run(results.parent)
    cut = [r for r in records if "interrupt" in r.summary]
    assert cut and all(r.status == "error" for r in cut)
    return records


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def descendants(root: int) -> list[int]:
    """Every process below ``root``, from /proc's parent links."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = [], [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        found += children
        frontier += children
    return found


# ----- this checkout's labs -----------------------------------------------------------------------------------------

def lab_ids(tag: str, subnet: str) -> tuple[str, str]:
    """A test lab's tag and subnet for this checkout (accelstack_lab.lab_ids: from the checkout's path, or
    ``ACCELSTACK_TEST_LAB_SALT``), so two checkouts' test runs never share a lab."""
    from accelstack_lab import lab_ids as checkout_lab_ids

    return checkout_lab_ids(tag, subnet)


# ---- a diagnosis of lines in hand ----

def raised(line: str) -> list[str]:
    """A traceback of a script's own call that ends in the exception ``line``."""
    return ["Traceback (most recent call last):", '  File "train.py", line 12, in <module>', "    main()", line]


def first_finding(lines: list[str]) -> Any:
    """The first finding of ``lines`` read as one log; a failed job always gets one."""
    from accelstack.diagnose import diagnose_lines

    diagnosis = diagnose_lines(lines)
    assert diagnosis.first is not None, f"a failed job always gets a finding: {lines[-3:]}"
    return diagnosis.first


def quiet(lines: list[str]) -> None:
    """``lines`` read as one log give no finding: a run that did not fail."""
    from accelstack.diagnose import diagnose_lines

    diagnosis = diagnose_lines(lines)
    assert diagnosis.findings == [], [(f.id, f.cause) for f in diagnosis.findings]


def first_cause(lines: list[str]) -> tuple[str, str] | None:
    """(cause, actor) of the first finding of ``lines`` read as one log; None where nothing was found."""
    from accelstack.diagnose import diagnose_lines

    found = diagnose_lines(lines).first
    return None if found is None else (found.cause, found.actor)
