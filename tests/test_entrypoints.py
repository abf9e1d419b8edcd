"""``inv`` and ``accelstack`` are one program: every task, through both, in fresh processes.

``inv`` loads the whole task collection before it parses a command line; the console script loads only the
task modules its command line names. A name that only one of those import orders breaks (a package's lazily
exported function shadowed by the submodule of the same name, once something imports that submodule) went
unseen for as long as no test ran a task through ``inv``: ``inv validate`` gave every host ``ERROR host:
TypeError: 'module' object is not callable``. So every task runs through both programs here, in fresh
processes, and their records must agree.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import accelstack

from .helpers import REPO, cli_env, command, run_program
from .test_nodecheck import rendered_node_file

H100_BUNDLE = REPO / "tests" / "data" / "h100" / "bundle"
H100_STACK = REPO / "tests" / "data" / "h100" / "h100-real.yml"
LOG = REPO / "tests" / "data" / "logs" / "cuda-oom.log"


def _every_task() -> list[str]:
    """Every task of the checkout: the product's and the lab's (the checkout's tasks.py adds them)."""
    from accelstack.cli import checkout_task_modules
    from accelstack.tasks import build_collection

    return sorted(build_collection(extra=checkout_task_modules()).task_names)


def _both(args: list[str], tmp_path: Path) -> dict[str, subprocess.CompletedProcess[str]]:
    with ThreadPoolExecutor(2) as pool:
        futures = {program: pool.submit(run_program, program, *args, runs=tmp_path / program)
                   for program in ("inv", "accelstack")}
    return {program: future.result() for program, future in futures.items()}


@pytest.mark.slow  # every task's help in two fresh processes each
def test_every_task_shows_the_same_help_under_both_programs() -> None:
    tasks = _every_task()
    assert {"validate", "analyze", "node-check", "lab.up", "repo.build", "stack.list"} <= set(tasks)
    jobs = [(program, task) for task in tasks for program in ("inv", "accelstack")]
    with ThreadPoolExecutor(4) as pool:
        procs = list(pool.map(lambda job: subprocess.run(
            command(job[0], job[1], "-h"), cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=120), jobs))
    helps: dict[str, dict[str, str]] = {}
    for (program, task), proc in zip(jobs, procs, strict=True):
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (program, task, proc.stderr[-2000:])
        first, _, rest = proc.stdout.partition("\n")
        assert first.startswith("Usage:") and f" {task} " in first, (program, task, first)
        helps.setdefault(task, {})[program] = rest
    for task, texts in helps.items():
        assert texts["inv"] == texts["accelstack"], task


def _steady(value: object) -> object:
    """A document without what differs between any two runs (times, run ids, durations)."""
    if isinstance(value, dict):
        return {k: _steady(v) for k, v in value.items() if k not in ("ts", "run_id", "duration_s", "generated")}
    if isinstance(value, list):
        return [_steady(v) for v in value]
    return value


def _statuses(stdout: str) -> dict[tuple[str, str], str]:
    records = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    return {(r["host"], r["check"]): r["status"] for r in records}


# One real run of each task that a fresh machine can run, through both programs: what it runs on and the exit
# codes either may give (the same for both). The lab's tasks and the Slurm step need root or a scheduler; they
# run through the console script in the lab tests, and their help above through both.
REAL_RUNS: dict[str, tuple[list[str], set[int]]] = {
    "facts": (["facts", "--json"], {0}),
    "drift": (["drift", "--json"], {0}),
    "validate": (["validate", "--json", "--only", "versions,env,libraries,health,collective_init"], {0}),
    "analyze": (["analyze", "--json", "--bundle", str(H100_BUNDLE), "--stack", str(H100_STACK)], {0, 1, 2}),
    "diagnose": (["diagnose", "--json", str(LOG)], {1}),
    "stack.list": (["stack.list"], {0}),
    "stack.check": (["stack.check", "cpu"], {0}),
    "provision": (["provision", "--check", "--json"], {0, 2}),
    "collect": (["collect", "--json"], {0}),
}


@pytest.mark.slow  # every task run for real under both programs
@pytest.mark.parametrize("task", sorted(REAL_RUNS))
def test_a_real_run_gives_the_same_answer_under_both_programs(task: str, tmp_path: Path) -> None:
    args, codes = REAL_RUNS[task]
    if task == "collect":
        args = [*args, "--output", "OUTPUT"]
    results: dict[str, subprocess.CompletedProcess[str]] = {}
    for program in ("inv", "accelstack"):
        argv = [str(tmp_path / program / "bundles") if a == "OUTPUT" else a for a in args]
        results[program] = run_program(program, *argv, runs=tmp_path / program)
    inv, script = results["inv"], results["accelstack"]
    for program, proc in results.items():
        assert "Traceback" not in proc.stderr + proc.stdout, (program, proc.stderr[-3000:])
        assert "object is not callable" not in proc.stdout + proc.stderr, (program, proc.stdout[-3000:])
        assert proc.returncode in codes, (program, proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert inv.returncode == script.returncode, (inv.stderr[-1000:], script.stderr[-1000:])
    if "--json" in args and task not in ("analyze", "diagnose"):
        assert _statuses(inv.stdout) == _statuses(script.stdout)
        assert _statuses(inv.stdout), inv.stdout[-1000:]
        assert "error" not in _statuses(inv.stdout).values(), inv.stdout[-3000:]
    elif task in ("analyze", "diagnose"):
        assert _steady(json.loads(inv.stdout)) == _steady(json.loads(script.stdout))


@pytest.mark.slow  # a real run, then seven more processes
def test_report_history_and_baseline_read_a_run_the_same_under_both_programs(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    made = run_program("accelstack", "validate", "--json", "--only", "versions,env", runs=runs)
    assert made.returncode == 0, made.stderr[-2000:]
    for args in (["report", "--format", "json"], ["history", "--json"], ["baseline", "--output", "PROGRAM"]):
        outs = {program: run_program(program, *(str(tmp_path / f"{program}.json") if a == "PROGRAM" else a
                                              for a in args), runs=runs) for program in ("inv", "accelstack")}
        for program, proc in outs.items():
            assert proc.returncode in (0, 2), (program, args, proc.stderr[-2000:])
            assert "Traceback" not in proc.stderr, (program, args, proc.stderr[-2000:])
        texts = {program: proc.stdout for program, proc in outs.items()}
        if args[0] == "report":
            assert _steady(json.loads(texts["inv"])) == _steady(json.loads(texts["accelstack"]))
        else:
            assert texts["inv"] == texts["accelstack"].replace("accelstack.json", "inv.json"), args


@pytest.mark.slow  # node-check for real under both programs
def test_node_check_runs_the_same_under_both_programs(tmp_path: Path) -> None:
    node_file = rendered_node_file(tmp_path, runs_dir=str(tmp_path / "node-runs"))
    outs = {program: run_program(program, "node-check", "--json", "--config", str(node_file), "--only",
                                 "versions,env", runs=tmp_path / program) for program in ("inv", "accelstack")}
    for program, proc in outs.items():
        assert "Traceback" not in proc.stderr, (program, proc.stderr[-2000:])
        assert _statuses(proc.stdout), (program, proc.stdout[-2000:], proc.stderr[-2000:])
        assert "error" not in _statuses(proc.stdout).values(), (program, proc.stdout[-3000:])
    assert _statuses(outs["inv"].stdout) == _statuses(outs["accelstack"].stdout)


def _lazy_packages() -> list[types.ModuleType]:
    found = []
    for info in pkgutil.walk_packages(accelstack.__path__, "accelstack."):
        if info.ispkg:
            package = importlib.import_module(info.name)
            if isinstance(getattr(package, "_SUBMODULES", None), dict):
                found.append(package)
    return found


def test_every_lazily_exported_name_is_what_it_claims_after_every_submodule_is_imported() -> None:
    """A package's lazy name must not be shadowed when its submodule of the same name is imported (Python sets
    ``package.submodule`` on import, replacing whatever the package held under that name)."""
    for info in pkgutil.walk_packages(accelstack.__path__, "accelstack."):
        if ".hostside." in info.name + "." or info.name.endswith(".__main__"):
            continue  # host-side scripts run on the hosts; __main__ runs the program
        importlib.import_module(info.name)
    packages = _lazy_packages()
    assert {p.__name__ for p in packages} >= {"accelstack.stacks", "accelstack.history"}
    for package in packages:
        submodules = package._SUBMODULES  # type: ignore[attr-defined]
        assert not set(submodules) & {m.name for m in pkgutil.iter_modules(package.__path__)}, package.__name__
        for name, submodule in submodules.items():
            value = getattr(package, name)
            assert not isinstance(value, types.ModuleType), (package.__name__, name)
            assert value is getattr(importlib.import_module(f"{package.__name__}.{submodule}"), name), name
