"""The CLI contract, as a user meets it under both programs (the ``accelstack`` console script and ``inv`` in
the checkout): bad input is exit 3 with one line before any host is touched, every task takes the same flags,
``-h`` is help, the defaults live in invoke's configuration."""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from invoke.exceptions import Exit

from .helpers import REPO, assert_bad_input, cli_env, run_program

HOST_TASKS = ["facts", "drift", "collect", "provision", "validate", "fleet-check"]
COMMON_FLAGS = ["--inventory", "--limit", "--json", "--forks", "--connect-timeout", "--set"]


# ----- 1. numeric flags: typed, range-checked, exit 3 at parse time ------------------------------------------

NUMERIC_CASES = [
    (["facts", "--forks", "abc"], ["--forks", "'abc' is not a whole number"]),
    (["facts", "--forks", "1.5"], ["--forks", "'1.5' is not a whole number"]),
    (["facts", "--forks", "0"], ["--forks", "0 is out of range", ">= 1"]),
    (["facts", "--forks=-1"], ["--forks", "-1 is out of range"]),
    (["validate", "--deadline", "abc"], ["--deadline", "'abc' is not a number"]),
    (["validate", "--deadline=-5"], ["--deadline", "-5 is out of range", "> 0"]),
    (["history", "--last", "abc"], ["--last", "not a whole number"]),
    (["report", "--busbw-drop-pct", "abc"], ["--busbw-drop-pct", "not a number"]),
    (["report", "--busbw-drop-pct=-5"], ["--busbw-drop-pct", "out of range"]),
    (["provision", "--connect-timeout", "0"], ["--connect-timeout", "out of range"]),
    (["provision", "--host-timeout", "soon"], ["--host-timeout", "not a number"]),
    (["provision", "--batch", "0"], ["--batch", "out of range"]),
    (["fleet-check", "--forks", "x"], ["--forks", "not a whole number"]),
    (["collect", "--connect-timeout", "nan"], ["--connect-timeout", "not a number"]),
    (["analyze", "--bundle", "b", "--expect-devices", "-1"], ["--expect-devices", "out of range"]),
    (["lab.up", "--hosts", "300"], ["--hosts", "out of range", "<= 256"]),
    (["baseline", "--keep", "abc"], ["--keep", "'abc' is not a whole number", ">= 1"]),
    (["baseline", "--keep", "0"], ["--keep", "0 is out of range"]),
]


@pytest.mark.parametrize(("args", "words"), NUMERIC_CASES, ids=[" ".join(a) for a, _ in NUMERIC_CASES])
def test_bad_numbers_are_exit_3_with_one_line_under_the_console_script(args: list[str], words: list[str],
                                                                       tmp_path: Path) -> None:
    proc = run_program("accelstack", *args, runs=tmp_path / "runs")
    assert_bad_input(proc, *words)
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()  # refused before any run began


@pytest.mark.parametrize("args", [["facts", "--forks", "abc"], ["history", "--last", "-3"],
                                  ["validate", "--deadline", "-5"], ["baseline", "--keep", "abc"]],
                         ids=lambda a: " ".join(a))
def test_bad_numbers_are_exit_3_under_inv_too(args: list[str], tmp_path: Path) -> None:
    assert_bad_input(run_program("inv", *args, runs=tmp_path / "runs"), args[1])


# ----- 1. filesystem mistakes, before any host ---------------------------------------------------------------

def test_runs_folder_that_is_a_file_is_exit_3(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.write_text("not a folder")
    for program in ("accelstack", "inv"):
        assert_bad_input(run_program(program, "facts", runs=runs), "ACCELSTACK_RUNS", "is a file")
    # The tasks that only read runs too: they were a FileExistsError traceback from the history index.
    for args in (["history"], ["history", "--drains"], ["report"], ["baseline"], ["baseline", "--show"]):
        assert_bad_input(run_program("accelstack", *args, runs=runs), "ACCELSTACK_RUNS", "is a file")


def test_runs_folder_that_cannot_be_created_is_exit_3(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    proc = run_program("accelstack", "validate", "--only", "devices", runs=blocker / "runs")
    assert_bad_input(proc, "ACCELSTACK_RUNS", "cannot be created")


@pytest.mark.parametrize("program", ["accelstack", "inv"])
def test_an_empty_runs_variable_means_unset_not_the_current_folder(program: str, tmp_path: Path) -> None:
    """``ACCELSTACK_RUNS=`` (a shell's way to unset it for one command) wrote run folders among the current
    folder's files; it means the default ``runs/`` now, as an empty XDG variable does."""
    work = tmp_path / "work"
    work.mkdir()
    head = ["-r", str(REPO)] if program == "inv" else []  # inv finds tasks.py in the checkout from here
    for empty in ("", "  "):
        proc = run_program(program, *head, "facts", "--json", env={"ACCELSTACK_RUNS": empty}, cwd=work)
        assert proc.returncode == 0, proc.stderr[-800:]
    assert sorted(p.name for p in work.iterdir()) == ["runs"]
    assert len([p for p in (work / "runs").iterdir() if p.is_dir()]) == 2


def test_report_output_naming_a_folder_is_exit_3(tmp_path: Path) -> None:
    proc = run_program("accelstack", "report", "--format", "json", "--output", str(tmp_path), runs=tmp_path)
    assert_bad_input(proc, "--output", "is a folder")


def test_collect_output_naming_a_file_is_exit_3_before_any_host(tmp_path: Path) -> None:
    target = tmp_path / "bundles"
    target.write_text("")
    proc = run_program("accelstack", "collect", "--output", str(target), runs=tmp_path / "runs")
    assert_bad_input(proc, "--output", "is a file")
    assert not (tmp_path / "runs").exists()


def test_fleet_check_reports_dir_naming_a_file_is_exit_3_before_validating(tmp_path: Path) -> None:
    target = tmp_path / "reports"
    target.write_text("")
    proc = run_program("inv", "fleet-check", "--reports-dir", str(target), runs=tmp_path / "runs")
    assert_bad_input(proc, "--reports-dir", "is a file")
    assert not (tmp_path / "runs").exists()  # no host was validated to find it out


# ----- 1. a port that answers but speaks no SSH ----------------------------------------------------------------

@pytest.fixture()
def not_ssh() -> Iterator[tuple[int, int]]:
    """Two local TCP ports: one answers with an HTTP error and hangs up, one accepts and says nothing."""
    servers, stop = [], threading.Event()

    def serve(sock: socket.socket, reply: bytes | None) -> None:
        held = []
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            if reply is None:
                held.append(conn)
            else:
                conn.sendall(reply)
                conn.close()
        for conn in held:
            conn.close()

    ports = []
    for reply in (b"HTTP/1.1 400 Bad Request\r\n\r\n", None):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        ports.append(sock.getsockname()[1])
        thread = threading.Thread(target=serve, args=(sock, reply), daemon=True)
        thread.start()
        servers.append((sock, thread))
    yield ports[0], ports[1]
    stop.set()
    for sock, thread in servers:
        thread.join(timeout=2)
        sock.close()


@pytest.mark.slow  # waits out a connect timeout
def test_a_port_that_does_not_speak_ssh_is_one_error_record_and_no_traceback(not_ssh: tuple[int, int],
                                                                             tmp_path: Path) -> None:
    garbage, silent = not_ssh
    inventory = tmp_path / "notssh.yml"
    inventory.write_text(f"hosts:\n  web: {{address: 127.0.0.1, port: {garbage}}}\n"
                         f"  mute: {{address: 127.0.0.1, port: {silent}}}\n")
    proc = run_program("accelstack", "facts", "--inventory", str(inventory), "--json", "--connect-timeout", "0.3",
                       runs=tmp_path / "runs")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.strip() == "", proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    assert sorted(r["host"] for r in records) == ["mute", "web"]
    for record in records:
        assert record["status"] == "error" and "\n" not in record["summary"]
        assert "no SSH banner" in record["summary"], record["summary"]


# ----- 1. inventories: an unknown stack at its line, hosts: as a list ----------------------------------------

def test_unknown_stack_points_at_the_inventory_line_and_facts_refuses_it(tmp_path: Path) -> None:
    inventory = tmp_path / "inv.yml"
    inventory.write_text("vars:\n  user: root\n  stack: cuda-99\nhosts:\n  n1: {address: 192.0.2.250}\n")
    for program, task in (("inv", "facts"), ("accelstack", "validate"), ("accelstack", "collect")):
        proc = run_program(program, task, "--inventory", str(inventory), runs=tmp_path / "runs")
        assert_bad_input(proc, "inv.yml:3", "unknown stack 'cuda-99'")
    assert not (tmp_path / "runs").exists()


def test_top_level_hosts_as_a_list_is_an_error(tmp_path: Path) -> None:
    inventory = tmp_path / "list.yml"
    inventory.write_text("vars: {stack: cpu}\nhosts:\n  - n1\n  - n2\n")
    assert_bad_input(run_program("accelstack", "facts", "--inventory", str(inventory), runs=tmp_path),
                     "list.yml:2", "not a list")


# The inventories a new user gets wrong, each read through both programs: one line naming the file and line,
# exit 3, no run folder, no host touched (their hosts sit on an address nothing answers: TEST-NET-1).
BAD_INVENTORIES = [
    ("eight.yml", "vars: {stack: cpu}\nhosts:\n  n1: {address: 192.0.2.250, expect_devices: eight}\n",
     ["eight.yml:3", "expect_devices: 'eight' is not a whole number"]),
    ("minus.yml", "vars: {stack: cpu, expect_devices: -3}\nhosts:\n  n1: {address: 192.0.2.250}\n",
     ["minus.yml:1", "expect_devices: -3 is out of range"]),
    ("port.ini", "[all:vars]\nstack=cpu\n[g]\nn1 ansible_host=192.0.2.250 rendezvous_port=99999\n",
     ["port.ini:4", "rendezvous_port: 99999 is out of range"]),
    ("huge.yml", "vars: {stack: cpu}\nhosts:\n  n[00000000:19999999]: {}\n",
     ["huge.yml:3", "stands for 20,000,000 hosts", "at most 200,000"]),
    ("bomb.yml", "vars:\n  stack: cpu\n  a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"  {c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefg", "bcdefgh", strict=True))
     + "hosts: {n1: {address: 192.0.2.250}}\n", ["bomb.yml:7", "refused", "alias bomb"]),
    ("deep.yml", "all:\n  children:\n" + "".join("    " * (i + 1) + f"g{i}:\n" + "    " * (i + 1) + "  children:\n"
                                                 for i in range(60)), ["deep.yml:", "nested deeper than 100"]),
]


@pytest.mark.parametrize(("name", "text", "words"), BAD_INVENTORIES, ids=[case[0] for case in BAD_INVENTORIES])
def test_a_bad_inventory_is_one_line_and_exit_3_before_any_host(name: str, text: str, words: list[str],
                                                                tmp_path: Path) -> None:
    inventory = tmp_path / name
    inventory.write_text(text)
    for program, task in (("accelstack", "validate"), ("inv", "facts")):
        proc = run_program(program, task, "--inventory", str(inventory), runs=tmp_path / "runs", timeout=60)
        assert_bad_input(proc, *words)
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow  # 3,000 nested groups, under both programs
def test_three_thousand_nested_groups_are_an_inventory_not_a_traceback(tmp_path: Path) -> None:
    lines = ["[all:vars]", "stack=cpu", "[g3000]", "localhost ansible_connection=local"]
    lines += [line for i in range(2999, -1, -1) for line in (f"[g{i}:children]", f"g{i + 1}")]
    inventory = tmp_path / "deep.ini"
    inventory.write_text("\n".join(lines) + "\n")
    for program in ("accelstack", "inv"):
        proc = run_program(program, "facts", "--inventory", str(inventory), "--limit", "g0", "--json",
                           runs=tmp_path / "runs")
        assert proc.returncode == 0, proc.stderr[-800:]
        assert [json.loads(line)["host"] for line in proc.stdout.splitlines()] == ["localhost"]


@pytest.mark.parametrize("program", ["accelstack", "inv"])
def test_set_is_checked_as_the_inventorys_own_vars_are(program: str, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    proc = run_program(program, "validate", "--only", "devices", "--set", "expect_devices=abc", runs=runs)
    assert_bad_input(proc, "--set expect_devices: 'abc' is not a whole number")
    proc = run_program(program, "facts", "--set", "multinode_deadline_s=2m", runs=runs)
    assert_bad_input(proc, "--set multinode_deadline_s: '2m' is not a number")
    assert not runs.exists()


def test_a_vars_file_beside_the_inventory_is_checked_too(tmp_path: Path) -> None:
    inventory = tmp_path / "inv.yml"
    inventory.write_text("vars: {stack: cpu}\nhosts:\n  localhost: {connection: local}\n")
    (tmp_path / "host_vars").mkdir()
    (tmp_path / "host_vars" / "localhost.yml").write_text("expect_devices: 8\nexpect_devices: 0\n")
    assert_bad_input(run_program("accelstack", "facts", "--inventory", str(inventory), runs=tmp_path / "runs"),
                     "host_vars/localhost.yml:2", "duplicate key 'expect_devices'")
    (tmp_path / "host_vars" / "localhost.yml").write_text("expect_devices: '-1'\n")
    assert_bad_input(run_program("inv", "facts", "--inventory", str(inventory), runs=tmp_path / "runs"),
                     "host_vars/localhost.yml:1", "expect_devices: -1 is out of range")


def test_an_alias_bomb_in_a_stack_file_is_refused_quickly(tmp_path: Path) -> None:
    stack = tmp_path / "bomb.yml"
    stack.write_text("name: bomb\nx0: &x0 [a, a, a, a, a, a, a, a, a, a]\n" + "".join(
        f"x{i + 1}: &x{i + 1} [{', '.join([f'*x{i}'] * 10)}]\n" for i in range(8)))
    for program in ("accelstack", "inv"):
        assert_bad_input(run_program(program, "stack.check", str(stack), runs=tmp_path, timeout=60),
                         "bomb.yml:", "alias bomb")


EMPTY_SELECTIONS = [
    (["facts", "--limit", ""], ["--limit", "'' names no host or group"]),
    (["provision", "--check", "--limit", ",,"], ["--limit", "',,' names no host or group"]),
    (["facts", "--limit", "!"], ["--limit", "term '!'", "names nothing"]),
    (["facts", "--inventory", ""], ["--inventory '' names no inventory"]),
    (["fleet-check", "--inventory", " "], ["--inventory '' names no inventory"]),
    (["validate", "--only", ""], ["--only '' names no check"]),
    (["fleet-check", "--only", ","], ["--only ',' names no check"]),
    (["node-check", "--only", ""], ["--only '' names no check"]),
]


@pytest.mark.parametrize(("args", "words"), EMPTY_SELECTIONS, ids=[" ".join(a) for a, _ in EMPTY_SELECTIONS])
def test_an_empty_selection_is_refused_not_read_as_everything(args: list[str], words: list[str],
                                                              tmp_path: Path) -> None:
    """``--limit "$HOSTS"`` with the variable unset selected every host: a provision meant for one rack ran on
    the whole fleet. An empty --limit, --inventory or --only names nothing, so it is bad input."""
    for program in ("accelstack", "inv"):
        assert_bad_input(run_program(program, *args, runs=tmp_path / "runs"), *words)
    assert not (tmp_path / "runs").exists()


def test_an_exclusion_written_with_a_space_still_excludes(tmp_path: Path) -> None:
    proc = run_program("accelstack", "facts", "--limit", "all,! localhost", runs=tmp_path / "runs")
    assert_bad_input(proc, "selects no host")  # localhost was excluded, not a host named " localhost"


def test_accelstack_home_without_inventories_says_so(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("")
    for home in (tmp_path / "missing", tmp_path / "notes.txt"):
        for program in ("accelstack", "inv"):
            proc = run_program(program, "facts", env={"ACCELSTACK_HOME": str(home)}, runs=tmp_path / "runs")
            assert_bad_input(proc, "no inventory named 'local'")
            assert f"ACCELSTACK_HOME is {home}, which holds no inventories/ folder" in proc.stderr


def test_an_age_older_than_the_calendar_reads_as_everything(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    assert run_program("accelstack", "facts", "--json", runs=runs).returncode == 0
    proc = run_program("inv", "history", "--json", "--since", "99999999999d", runs=runs)
    assert proc.returncode == 0, proc.stderr  # was an OverflowError traceback
    assert len(proc.stdout.splitlines()) == 1


def test_a_vars_file_that_links_to_nothing_is_refused(tmp_path: Path) -> None:
    inventory = tmp_path / "inv.yml"
    inventory.write_text("vars: {stack: cpu}\nhosts:\n  localhost: {connection: local}\n")
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "all.yml").symlink_to(tmp_path / "moved-away.yml")
    for program in ("accelstack", "inv"):
        assert_bad_input(run_program(program, "facts", "--inventory", str(inventory), runs=tmp_path / "r"),
                         "group_vars/all.yml", "is a link to", "which does not exist")


def test_a_node_files_vars_are_checked_as_an_inventorys_are(tmp_path: Path) -> None:
    node = tmp_path / "node.yml"
    node.write_text("node: here\nstack:\n  name: cpu\n  vendor: cpu\n  backend: gloo\n  description: x\n"
                    "  components:\n    python: {version: '3.11', match: release}\n"
                    "    torch: {version: 2.13.0+cpu, match: release}\n"
                    "  paths: {venv: /opt/v, python: /opt/v/bin/python}\n  devices: [cpu]\n"
                    "vars:\n  expect_devices: eight\n")
    for program in ("accelstack", "inv"):
        proc = run_program(program, "node-check", "--config", str(node), "--only", "devices",
                           runs=tmp_path / "runs")
        assert_bad_input(proc, "node.yml", "expect_devices: 'eight' is not a whole number")  # was a FAIL, exit 1


# ----- 2. every task alike -------------------------------------------------------------------------------------

def _help(program: str, task: str) -> subprocess.CompletedProcess[str]:
    return run_program(program, task, "-h")


@pytest.mark.parametrize(("program", "task"), [("inv", "provision"), ("accelstack", "diagnose"),
                                               ("accelstack", "history"), ("inv", "validate")])
def test_dash_h_is_help(program: str, task: str) -> None:
    proc = _help(program, task)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Usage:") and f" {task} " in proc.stdout.splitlines()[0]


def _program_output(*argv: str) -> str:
    """The console script's Program, in this process (fast enough to sweep every task)."""
    from accelstack.cli import program

    out = io.StringIO()
    with redirect_stdout(out):
        try:
            program.run(argv=["accelstack", *argv], exit=False)
        except SystemExit:
            pass
    return out.getvalue()


def test_every_task_takes_dash_h_as_help_and_no_derived_short_flags() -> None:
    from accelstack.tasks import ns

    for context in ns.to_contexts():
        # -h is help: invoke's core flag, or (diagnose, whose positional LOG would eat it) the task's own --help.
        assert "-h" not in context.flags or context.flags["-h"].name == "help", context.name
        singles = [name for name in context.flags if len(name.lstrip("-")) == 1 and name != "-h"]
        assert singles in ([], ["-l"]), (context.name, singles)  # diagnose keeps -l for --log
        assert _program_output(context.name, "-h").startswith("Usage:"), context.name


def test_host_tasks_take_the_common_flags_with_value_placeholders() -> None:
    for task in HOST_TASKS:
        text = _program_output(task, "--help")
        for flag in COMMON_FLAGS:
            assert flag in text, (task, flag)
        assert "--forks=INT" in text and "--connect-timeout=SECONDS" in text, task


def test_history_filters_with_host_and_counts_with_last() -> None:
    text = _program_output("history", "--help")
    assert "--host=STRING" in text and "--last=INT" in text and "--limit" not in text


def test_list_shows_whole_first_sentences() -> None:
    from invoke.util import helpline

    from accelstack.tasks import ns

    for name in ns.task_names:
        line = helpline(ns[name]) or ""
        assert line.rstrip().endswith((".", ")", "?")), (name, line)


def test_defaults_come_from_invoke_configuration_and_the_environment(tmp_path: Path) -> None:
    project = tmp_path / "site"
    (project / "inventories").mkdir(parents=True)
    (project / "stacks").mkdir()
    (project / "invoke.yaml").write_text("accelstack:\n  forks: 0\n")
    proc = run_program("accelstack", "facts", cwd=project, env={"ACCELSTACK_HOME": str(project)}, runs=tmp_path)
    assert_bad_input(proc, "invoke.yaml:2: accelstack.forks", "0 is out of range")
    proc = run_program("inv", "facts", env={"ACCELSTACK_CONNECT_TIMEOUT": "never"}, runs=tmp_path)
    assert_bad_input(proc, "ACCELSTACK_CONNECT_TIMEOUT", "'never' is not a number")
    # A value from the environment is used, not only checked: two facts runs, history --json shows the newest.
    runs = tmp_path / "runs"
    for _ in range(2):
        assert run_program("accelstack", "facts", "--json", runs=runs).returncode == 0
    shown = run_program("accelstack", "history", "--json", "--host", "localhost",
                        env={"ACCELSTACK_LAST": "1"}, runs=runs)
    assert shown.returncode == 0, shown.stderr
    assert len(shown.stdout.splitlines()) == 1
    assert len(run_program("accelstack", "history", "--json", runs=runs).stdout.splitlines()) == 2


# ----- 2. stacks: the hint works, the name rule, the verdict after the naming error --------------------------

def test_copied_stack_with_the_wrong_name_still_gets_its_verdict(tmp_path: Path) -> None:
    copy = tmp_path / "mycpu.yml"
    copy.write_text((REPO / "stacks" / "cpu.yml").read_text())
    proc = run_program("accelstack", "stack.check", str(copy))
    assert_bad_input(proc, "mycpu.yml:", "name 'cpu' differs from the file name 'mycpu'")
    assert proc.stdout.startswith("compatible cpu")


def test_stack_check_hint_on_a_path_names_a_command_that_works(tmp_path: Path) -> None:
    broken = tmp_path / "nv.yml"
    text = (REPO / "stacks" / "nvidia-cuda12.4.yml").read_text().replace("name: nvidia-cuda12.4", "name: nv")
    lines = [('  nccl: "2.11.4"' if line.startswith("  nccl:") else line) for line in text.splitlines()]
    broken.write_text("\n".join(lines) + "\n")
    proc = run_program("inv", "stack.check", str(broken))
    assert_bad_input(proc, "nv.yml", "breaks 1 compatibility rule")
    hint = next(line for line in proc.stderr.splitlines() if "hint:" in line)
    command = hint.split("then run: ")[1].split()
    assert command[:2] == ["inv", "stack.check"]
    again = run_program("inv", *command[1:])  # the suggested command finds the same stack
    assert_bad_input(again, "breaks 1 compatibility rule")


# ----- 3. workflows ------------------------------------------------------------------------------------------------

def test_provision_check_on_the_embedded_default_needs_no_repository(tmp_path: Path) -> None:
    proc = run_program("accelstack", "provision", "--check", "--json", runs=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    record = json.loads(proc.stdout.splitlines()[0])
    assert record["status"] == "pass" and record["evidence"]["plan"]["problems"] == []
    assert not any(change["uploads"] for change in record["evidence"]["plan"]["changes"])


def test_console_script_from_an_unactivated_venv_uses_that_venv_python(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = cli_env(runs=tmp_path / "runs")
    env["PATH"] = "/usr/bin:/bin"  # as cron runs it: no activated venv, no pyenv shims
    proc = subprocess.run([str(python), "-m", "accelstack", "facts", "--json"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    facts = json.loads(proc.stdout.splitlines()[0])["evidence"]["facts"]
    assert facts["stack_python"] == str(python)
    assert facts["torch"]["version"].startswith("2.13.0")  # the venv sees the torch beside accelstack


def test_lab_inventory_names_the_artifact_repository(tmp_path: Path) -> None:
    from accelstack.inventory import load_inventory
    from accelstack_lab import Lab, LabHost

    (tmp_path / "inventories").mkdir()
    lab = Lab(tmp_path, tag="acz", state_dir=tmp_path / "state")
    repo = tmp_path / ".lab" / "repo"
    lab._write_inventory({"lab1": LabHost("lab1", 1, "10.213.0.11", "acz-lab1", "aczv1")}, "cpu", repo)
    assert load_inventory(str(lab.inventory)).hosts["lab1"].vars["artifact_repo"] == str(repo)


def _manifest(folder: Path, entries: list[tuple[str, str]]) -> Path:
    import yaml

    folder.mkdir(parents=True, exist_ok=True)
    rows = [{"file": f"wheels/{c}-{v}.whl", "sha256": "0" * 64, "size": 1, "component": c, "version": v}
            for c, v in entries]
    (folder / "manifest.yml").write_text(yaml.safe_dump({"artifacts": rows}))
    return folder


def test_lab_repository_is_built_only_when_it_lacks_the_stack(tmp_path: Path) -> None:
    from accelstack_lab.simulated.repository import repository_covers

    assert not repository_covers(tmp_path / "none", ["cpu"])
    no_deps = _manifest(tmp_path / "a", [("torch", "2.13.0+cpu")])
    assert not repository_covers(no_deps, ["cpu"])  # torch would not install with --no-index
    ready = _manifest(tmp_path / "b", [("torch", "2.13.0+cpu"), ("python-dep", "1.0")])
    assert repository_covers(ready, ["cpu"])
    assert not repository_covers(ready, ["nvidia-cuda12.4"])  # no simulated driver, CUDA, NCCL


@pytest.mark.parametrize("program", ["accelstack", "inv"])
def test_an_unknown_flag_is_bad_input_too(program: str, tmp_path: Path) -> None:
    # history counts with --last and filters with --host; --limit meant both once, and is gone.
    assert_bad_input(run_program(program, "history", "--limit", "5", runs=tmp_path),
                     "history:", "'--limit'")
    assert_bad_input(run_program(program, "stack.check", runs=tmp_path), "stack.check:", "'name'")


def test_a_second_parser_in_one_process_still_shows_every_flags_help() -> None:
    """invoke pops each flag's help as it builds a parser; the collection is built per command line, so the
    second `--help` in one process (tests, an embedding program) showed flags with no text."""
    from accelstack.tasks.validate import validate

    first = {a.name: a.help for a in validate.get_arguments()}
    second = {a.name: a.help for a in validate.get_arguments()}
    assert first["tier"] and first["only"] and first["engine"]
    assert second == first


def test_an_unset_deadline_leaves_the_inventorys_multinode_deadline_to_apply(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--deadline` always had a value (the collection's default 120), so the inventory's multinode_deadline_s,
    read on the hosts next, never applied. Only what a person set reaches the run now."""
    from types import SimpleNamespace

    from accelstack.tasks.common import explicit_setting

    monkeypatch.delenv("ACCELSTACK_DEADLINE", raising=False)
    defaults = SimpleNamespace(config={"accelstack": {"deadline": 120.0}})
    assert explicit_setting(defaults, "deadline") is None
    assert explicit_setting(defaults, "deadline", "45") == 45.0
    assert explicit_setting(SimpleNamespace(config={"accelstack": {"deadline": 300}}), "deadline") == 300.0
    monkeypatch.setenv("ACCELSTACK_DEADLINE", "90")
    assert explicit_setting(defaults, "deadline") == 90.0


def test_a_number_flag_nobody_declared_is_still_checked() -> None:
    """A task flag typed by its default (``keep: int = 3``) parses through the same Number as the declared ones:
    a new flag cannot bring invoke's ``int()`` traceback back."""
    from accelstack.results.baseline import DEFAULT_KEEP
    from accelstack.tasks.common import NumberArgument
    from accelstack.tasks.report import baseline

    keep = {a.name: a for a in baseline.get_arguments()}["keep"]
    assert isinstance(keep, NumberArgument) and keep.value == DEFAULT_KEEP  # its default stays
    with pytest.raises(Exit) as info:
        keep.set_value("x")
    assert info.value.code == 3 and "--keep: 'x' is not a whole number" in str(info.value.message)


# ----- invoke's configuration: files, -f and INVOKE_ACCELSTACK_* are input like a flag --------------------------

BAD_CONFIG_FILES = [
    ("accelstack: [1, 2]\n", ["invoke.yaml:1", "accelstack: holds settings", "not a list"]),
    (": : [\n", ["invoke.yaml:1", "invalid YAML"]),
    ("accelstack:\n  deadline: \"120s\"\n", ["invoke.yaml:2", "accelstack.deadline: '120s' is not a number"]),
    ("accelstack:\n  fork: 8\n", ["invoke.yaml:2", "accelstack.fork is not a setting", "forks"]),
    ("- accelstack\n", ["invoke.yaml", "holds a mapping at the top, not a list"]),
    ("accelstack:\n  forks: 8\n  forks: 9\n", ["invoke.yaml:3", "duplicate key 'forks'"]),
    ("run: [1]\n", ["invoke.yaml:1", "run: holds invoke's run settings (a mapping), not a list"]),
    ("accelstack:\n  forks: true\n", ["invoke.yaml:2", "accelstack.forks: True is not a whole number"]),
    ("a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8)),
     ["invoke.yaml:", "refused", "alias bomb"]),
]


@pytest.mark.parametrize(("text", "words"), BAD_CONFIG_FILES, ids=[t[:24] for t, _ in BAD_CONFIG_FILES])
def test_a_bad_configuration_file_is_one_line_and_exit_3_under_both_programs(text: str, words: list[str],
                                                                             tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "inventories").mkdir(parents=True)
    (site / "stacks").mkdir()
    (site / "invoke.yaml").write_text(text)
    env = cli_env({"ACCELSTACK_HOME": str(site)}, runs=tmp_path / "runs")
    # The project's invoke.yaml (the console script reads it from ACCELSTACK_HOME), and the same file by -f.
    assert_bad_input(run_program("accelstack", "facts", env=env), *words)
    assert_bad_input(run_program("inv", "-f", str(site / "invoke.yaml"), "facts", runs=tmp_path / "runs"),
                     *words)
    assert not (tmp_path / "runs").exists()


def test_a_configuration_file_named_by_f_must_exist_and_be_one(tmp_path: Path) -> None:
    for program in ("accelstack", "inv"):
        assert_bad_input(run_program(program, "-f", str(tmp_path / "absent.yaml"), "facts", runs=tmp_path),
                         "absent.yaml", "no such configuration file")
        assert_bad_input(run_program(program, "-f", str(tmp_path), "facts", runs=tmp_path),
                         "ends in .yaml, .yml, .json or .py")
    (tmp_path / "c.json").write_text('{"accelstack": {"forks": 2')
    assert_bad_input(run_program("accelstack", "-f", str(tmp_path / "c.json"), "facts", runs=tmp_path),
                     "c.json", "not a configuration file")
    assert_bad_input(run_program("inv", "facts", env=cli_env({"INVOKE_RUNTIME_CONFIG": str(tmp_path / "gone.yml")},
                                                      runs=tmp_path)), "gone.yml", "no such configuration file")


@pytest.mark.parametrize("program", ["accelstack", "inv"])
def test_invoke_environment_settings_are_checked_like_flags(program: str, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    assert_bad_input(run_program(program, "facts", env={"INVOKE_ACCELSTACK_FORKS": "abc"}, runs=runs),
                     "INVOKE_ACCELSTACK_FORKS: 'abc' is not a whole number")
    assert_bad_input(run_program(program, "facts", env={"INVOKE_ACCELSTACK_CONNECT_TIMEOUT": "-1"}, runs=runs),
                     "INVOKE_ACCELSTACK_CONNECT_TIMEOUT: -1 is out of range")
    assert not runs.exists()
    # A good one is used: the run goes on with it.
    assert run_program(program, "facts", "--json", env={"INVOKE_ACCELSTACK_FORKS": "2"}, runs=runs).returncode == 0


def test_a_good_configuration_file_still_sets_the_defaults(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("accelstack:\n  last: 1\n")
    runs = tmp_path / "runs"
    for _ in range(2):
        assert run_program("accelstack", "facts", "--json", runs=runs).returncode == 0
    shown = run_program("inv", "-f", str(tmp_path / "c.yaml"), "history", "--json", runs=runs)
    assert shown.returncode == 0, shown.stderr
    assert len(shown.stdout.splitlines()) == 1


def test_a_status_filter_that_names_no_status_is_exit_3(tmp_path: Path) -> None:
    for program in ("accelstack", "inv"):
        assert_bad_input(run_program(program, "history", "--status", "failed", runs=tmp_path),
                         "--status 'failed' is not one of pass, warn, fail, error, skip")


def test_invokes_own_flags_and_help_lookups_are_bad_input_too(tmp_path: Path) -> None:
    # -T was int()'s traceback; --help/--list naming nothing exited 1, the code that means a host failed.
    assert_bad_input(run_program("accelstack", "-T", "abc", "facts", runs=tmp_path),
                     "--command-timeout: 'abc' is not a whole number")
    for program in ("accelstack", "inv"):
        assert_bad_input(run_program(program, "--help", "nope", runs=tmp_path), "No idea what 'nope' is")
        assert_bad_input(run_program(program, "--list=nope", runs=tmp_path), "Sub-collection 'nope'")
    assert run_program("accelstack", "--help", "facts", runs=tmp_path).returncode == 0


def test_the_word_diagnose_as_a_flags_value_does_not_turn_into_log_flags(tmp_path: Path) -> None:
    # `facts --limit diagnose` was rewritten into `--log` flags meant for `diagnose a.log b.log`.
    assert_bad_input(run_program("accelstack", "facts", "--limit", "diagnose", runs=tmp_path),
                     "--limit: pattern 'diagnose'", "matches no host")
    proc = run_program("accelstack", "diagnose", str(REPO / "tests" / "data" / "logs" / "cuda-oom.log"), "--json",
                       runs=tmp_path)
    assert proc.returncode == 1 and json.loads(proc.stdout)["findings"], proc.stderr
