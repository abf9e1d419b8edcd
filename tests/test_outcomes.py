"""Every outcome of every check, from a capture or a simulated state: one generic runner over JSON cases.

A verdict is a promise (``pass`` measured and good, ``warn`` measured and close, ``fail`` measured and bad, ``error``
not measured, ``skip`` does not apply), so each check gets a case for each outcome it can give, and a check whose
declared outcome no case reaches fails :func:`test_every_declared_outcome_has_a_case`.

Layout: ``tests/data/outcomes/<check>/`` holds

* ``outcomes.json``: ``{"outcomes": ["pass", "fail", "error", "skip"], "cannot": {"warn": "why this check never
  warns"}, "elsewhere": {"error": "tests/test_x.py::test_name"}}``: the outcomes the check can give (every one
  needs a case, or names in ``elsewhere`` the Python test that reaches it, a gap kept visible until a case
  replaces it) and, for each one it cannot, why.
* one ``<name>.json`` per case::

    {"about": "what state this is and why it gives this outcome",
     "kind": "script" | "document" | "clock" | "host_error",
     ...the kind's inputs...,
     "expect": {"status": "fail",              # required
                "check": "memory.devices",      # the record to look at; default: the folder's name
                "host": "n1",                   # default: the case's host (n1)
                "summary_has": ["..."], "remedy_has": ["..."], "summary_lacks": ["..."],
                "evidence": {"key": value}}}    # a subset of the record's evidence

Kinds (what the control side does with it is what ``accelstack.engines.ssh.host.run_script`` does: the document is
parsed, every check becomes a record with :func:`to_record` and is judged with :func:`judge_record` by its check's declared
judge):

* ``script``: run the registry's script ``<validator>.py`` as the run does, through :func:`command_for` (the same shell
  line, ``timeout`` included, without sourcing the host's env file), with ``config`` as its JSON argument.
  ``python`` (default: this interpreter) is the python the command names; a path that does not exist is a stack
  that is not provisioned. ``files`` (``{path under the root: text | {"text", "mode"} | {"capture": file} |
  {"dir": true}}``) are written under a temporary root that is the script's ``ACCELSTACK_SIM_ROOT`` (the
  validators prefix their fixed paths with it: /dev/shm, /sys, /proc/self/mountinfo, /etc/hccn.conf, the
  Ascend driver's tools). ``tools`` (``{name: [{"args_have": "--x", "exit": 0, "stdout": text or {"capture":
  file}}]}``) are vendor tools on ``PATH`` that replay captured output (the first entry whose ``args_have`` is in
  the arguments answers; no entry: exit 2). The ``PATH`` holds only those and /usr/bin:/bin, so a tool not named
  is missing. ``setup: "ascend-driver"`` installs the lab's simulated Ascend driver (4 NPUs) under the root
  first; ``edits`` (``{path under the root: [[old, new], ...]}``) then change its files. ``rlimit_memlock``
  (bytes) lowers the script's memlock limit; ``env`` adds variables.
* ``document``: ``item`` is one check as a validator printed it (the JSON object in ``{"checks": [...]}``), or
  ``capture`` + ``capture_check`` take it from a captured run's JSON Lines (a real host's record: its status
  is judged again from its evidence, ``override`` replaces fields first). Judged with ``config``.
* ``clock``: ``samples`` (``[[host, offset_s or null, error_s, why], ...]``) judged by
  :func:`accelstack.engines.ssh.cluster.judge_clock` with the shipped thresholds.
* ``host_error``: ``error`` (a class in :mod:`accelstack.errors`) with ``message`` for host ``host`` read
  from ``source`` (``inventory file:line``), made into the run's record by :func:`host_error_record`.
* ``drift``: ``installed`` (component -> version, as the facts give them) against the stack file ``stack``
  (relative to the repository), judged by :func:`accelstack.stacks.drift_records` and renamed ``versions.<component>``
  as :func:`accelstack.engines.ssh.host.versions_records` does.

``validator`` names a script of the registry (:func:`load_registry`, by its file's stem), wherever the registry
keeps them. ``device_floors: "nvidia"`` adds the vendor's shipped device rows to ``config``, as the run's host
config does. The folders themselves are held to the registry: every check it declares has a folder (a check
with records ``x.y`` may have one folder per record) or a line in :data:`NO_TABLE_YET` saying why not.

``remedy_missing`` (a sentence) marks a case whose record lacks the remedy a warn, fail or error owes, a defect
in code this table does not own: the case then asserts the remedy is still missing, so the fix shows.

Strings in ``config``, ``files``, ``edits`` and ``item`` may name ``{root}`` (the temporary root) and ``{tmp}``
(a scratch folder beside it); ``{"capture": "path", "append": "text"}`` anywhere in ``item``, ``files`` or
``tools`` is that file's text (path relative to the repository), plus ``append`` if given, with each ``[old,
new]`` of ``replace`` applied first (an ``old`` that is not in the text fails the case: a fault written into a
real capture must hit). Add a check by adding its folder; add a kind here when a check needs one.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from accelstack import errors
from accelstack.engines.ssh.cluster import judge_clock
from accelstack.engines.ssh.remote import command_for
from accelstack.inventory.model import Host
from accelstack.results.records import STATUSES, Record
from accelstack.stacks import drift_records, load_matrix, load_stack
from accelstack.validate.device_floors import load_device_floors
from accelstack.validate.judge import (
    host_error_record,
    judge_record,
    parse_document,
    to_record,
    unparsable_record,
)
from accelstack.validate.registry import all_checks, judge_for, load_registry
from accelstack.validate.thresholds import load_thresholds

REPO = Path(__file__).resolve().parent.parent
OUTCOMES = REPO / "tests" / "data" / "outcomes"
HOST = "n1"
H100_RUN = "tests/data/captures/h100_validate_real_stack_580.159.04.jsonl"
CASES = sorted(OUTCOMES.glob("*/*.json"))
CASES = [c for c in CASES if c.name != "outcomes.json"]


def case_id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def substitute(value: Any, places: dict[str, str]) -> Any:
    if isinstance(value, str):
        for key, place in places.items():
            value = value.replace("{" + key + "}", place)
        return value
    if isinstance(value, list):
        return [substitute(v, places) for v in value]
    if isinstance(value, dict):
        if "capture" in value and set(value) <= {"capture", "append", "replace"}:
            text = (REPO / value["capture"]).read_text()
            for old, new in value.get("replace") or []:
                assert old in text, f"{old!r} is not in {value['capture']}: the edit would prove nothing"
                text = text.replace(old, new)
            return substitute(text + value.get("append", ""), places)
        return {k: substitute(v, places) for k, v in value.items()}
    return value


def write_files(root: Path, files: dict[str, Any]) -> None:
    for rel, spec in files.items():
        path = root / rel
        if isinstance(spec, dict) and spec.get("dir"):
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        text = spec["text"] if isinstance(spec, dict) else spec
        path.write_text(text)
        if isinstance(spec, dict) and spec.get("mode"):
            path.chmod(int(str(spec["mode"]), 8))


def write_tools(bin_dir: Path, tools: dict[str, list[dict[str, Any]]]) -> None:
    """Each tool: a python script that answers with the first entry whose ``args_have`` is in its arguments."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, answers in tools.items():
        script = bin_dir / name
        script.write_text(
            f"#!{sys.executable}\nimport sys\nargs = ' '.join(sys.argv[1:])\n"
            f"for a in {answers!r}:\n"
            "    if a.get('args_have', '') in args:\n"
            "        sys.stdout.write(a.get('stdout', ''))\n"
            "        sys.exit(a.get('exit', 0))\n"
            "sys.stderr.write('unexpected arguments: ' + args + '\\n')\nsys.exit(2)\n")
        script.chmod(0o755)


@pytest.fixture(scope="session")
def ascend_driver_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from accelstack_lab.simulated import packages

    path = tmp_path_factory.mktemp("outcome-driver") / "driver.run"
    path.write_bytes(packages.ascend_driver("25.0.rc1.1", "x86_64").data)
    return path


def install_ascend_driver(run: Path, root: Path, path: str) -> None:
    (root / "etc").mkdir(parents=True, exist_ok=True)
    (root / "etc" / "passwd").write_text("root:x:0:0::/root:/bin/sh\nHwHiAiUser:x:1000:1000::/home/H:/bin/sh\n")
    (root / "etc" / "group").write_text("root:x:0:\nHwHiAiUser:x:1000:\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELSTACK_SIM", "ASCEND_"))}
    env.update(ACCELSTACK_SIM_ROOT=str(root), ACCELSTACK_SIM_DEVICES=json.dumps({"count": 4}), PATH=path)
    proc = subprocess.run(["sh", str(run), "--full", "--quiet"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr


def judge_output(stdout: str, stderr: str, exit_status: int, command: str, config: dict[str, Any],
                 check: str) -> list[Record]:
    """What accelstack.engines.ssh.host.run_script does with what a validator printed."""
    try:
        items = parse_document(stdout)
    except ValueError:
        return [unparsable_record(HOST, check, command=command, stdout=stdout, stderr=stderr,
                                  exit_status=exit_status, inventory=config.get("inventory"))]
    records = [to_record(HOST, item, command=command, stdout=stdout, stderr=stderr) for item in items]
    registry = load_registry()
    return [judge_record(record, config, load_thresholds(), judge_for(registry, record.check)) for record in records]


def case_config(case: dict[str, Any], places: dict[str, str]) -> dict[str, Any]:
    config: dict[str, Any] = {"host": HOST}
    if case.get("device_floors"):
        config.update(load_device_floors(vendor=case["device_floors"]))
    config.update(case.get("config") or {})
    return dict(substitute(config, places))


def from_drift(case: dict[str, Any]) -> list[Record]:
    """What versions_records does with the facts' components: drift against the stack, renamed."""
    records = drift_records(case.get("host", HOST), load_stack(REPO / case["stack"]), case["installed"], load_matrix())
    for record in records:
        record.check = "versions." + record.check.split(".", 1)[-1]
    return records


def run_script(case: dict[str, Any], check: str, tmp_path: Path, places: dict[str, str],
               driver: Any) -> list[Record]:
    root = Path(places["root"])
    bin_dir = tmp_path / "bin"
    write_tools(bin_dir, substitute(case.get("tools") or {}, places))
    path = f"{bin_dir}:/usr/bin:/bin"
    if case.get("setup") == "ascend-driver":
        (bin_dir / "python3").symlink_to(sys.executable)  # the simulated tools' shebang
        install_ascend_driver(driver(), root, path)
    elif case.get("setup"):
        pytest.fail(f"unknown setup {case['setup']!r}")
    write_files(root, substitute(case.get("files") or {}, places))
    for rel, pairs in substitute(case.get("edits") or {}, places).items():
        target = root / rel
        text = target.read_text()
        for old, new in pairs:
            assert old in text, f"{old!r} is not in {target}"
            text = text.replace(old, new)
        target.write_text(text)
    config = case_config(case, places)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELSTACK_SIM", "ASCEND_"))}
    env.update(ACCELSTACK_SIM_ROOT=str(root), PATH=path, **substitute(case.get("env") or {}, places))
    env.pop("CUDA_VISIBLE_DEVICES", None)
    limit = case.get("rlimit_memlock")

    def lower_memlock() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_MEMLOCK, (int(limit), int(limit)))

    scripts = {v.path.stem: v.path for v in load_registry() if v.path is not None}
    if case["validator"] not in scripts:
        pytest.fail(f"no validator script {case['validator']!r} in the registry: {sorted(scripts)}")
    script = str(scripts[case["validator"]])
    python = substitute(case.get("python") or sys.executable, places)
    command = command_for(script, python, config, timeout=120, source_env=False)
    proc = subprocess.run(["/bin/sh", "-c", command], env=env, capture_output=True, text=True, timeout=150,
                          preexec_fn=lower_memlock)
    return judge_output(proc.stdout, proc.stderr, proc.returncode, command, config, check)


def from_document(case: dict[str, Any], check: str, places: dict[str, str]) -> list[Record]:
    if "capture" in case:
        lines = (REPO / case["capture"]).read_text().splitlines()
        found = [json.loads(line) for line in lines if line.strip()]
        item = next(r for r in found if r["check"] == case["capture_check"])
        item = {k: item[k] for k in ("check", "status", "summary", "metrics", "evidence", "remedy")}
        item.update(case.get("override") or {})
    else:
        item = case["item"]
    item = substitute(item, places)
    config = case_config(case, places)
    document = json.dumps({"checks": [item]})
    return judge_output(document + "\n", "", 0, "(from a capture)", config, check)


def run_case(path: Path, tmp_path: Path, driver: Any) -> tuple[dict[str, Any], Record]:
    case = json.loads(path.read_text())
    check = path.parent.name
    root, scratch = tmp_path / "root", tmp_path / "tmp"
    root.mkdir()
    scratch.mkdir()
    places = {"root": str(root), "tmp": str(scratch)}
    expect = substitute(case["expect"], places)
    kind = case["kind"]
    if kind == "script":
        records = run_script(case, check, tmp_path, places, driver)
    elif kind == "document":
        records = from_document(case, check, places)
    elif kind == "clock":
        records = judge_clock([tuple(s) for s in case["samples"]], load_thresholds())  # type: ignore[misc]
    elif kind == "drift":
        records = from_drift(case)
    elif kind == "host_error":
        err_class = getattr(errors, case["error"])
        host = Host(name=case.get("host", HOST), address="192.0.2.1", source=case.get("source", ""))
        records = [host_error_record(host, err_class(case["message"], host=host.name), 12.5)]
    else:
        pytest.fail(f"{path}: unknown kind {kind!r}")
    want_check, want_host = expect.get("check", check), expect.get("host", case.get("host", HOST))
    matching = [r for r in records if r.check == want_check and r.host == want_host]
    assert len(matching) == 1, (f"{path.name}: one {want_check} record for {want_host} expected, got "
                                f"{[(r.host, r.check, r.status, r.summary) for r in records]}")
    return expect, matching[0]


def case_known_gap(path: Path) -> str | None:
    return json.loads(path.read_text()).get("remedy_missing")


# The checks that import torch in the script under test: seconds a case.
TORCH_CHECKS = {"torch_devices", "collective_init"}


@pytest.mark.parametrize("path", [pytest.param(c, marks=pytest.mark.slow) if c.parent.name in TORCH_CHECKS else c
                                  for c in CASES], ids=[case_id(c) for c in CASES])
def test_outcome(path: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    expect, record = run_case(path, tmp_path, lambda: request.getfixturevalue("ascend_driver_run"))
    shown = f"{path.name}: {record.status}: {record.summary} (remedy: {record.remedy})"
    assert record.status == expect["status"], shown
    for text in expect.get("summary_has", []):
        assert text in record.summary, shown
    for text in expect.get("summary_lacks", []):
        assert text not in record.summary, shown
    for text in expect.get("remedy_has", []):
        assert record.remedy and text in record.remedy, shown
    for key, value in (expect.get("evidence") or {}).items():
        assert record.evidence.get(key) == value, (shown, key, record.evidence.get(key))
    if case_known_gap(path):
        # A defect the case documents (in src/, owned elsewhere): it must still be there, so fixing it fails
        # the case and the marker goes.
        assert not record.remedy, f"{shown}: the remedy is there now: drop remedy_missing from {path.name}"
    elif record.status in ("fail", "error", "warn"):
        assert record.remedy, f"{shown}: a {record.status} names no next step"
    if record.status == "skip":
        assert record.summary, f"{shown}: a skip says why"


def test_every_declared_outcome_has_a_case() -> None:
    folders = sorted(p for p in OUTCOMES.iterdir() if p.is_dir())
    assert folders, "no outcome tables"
    for folder in folders:
        declared = json.loads((folder / "outcomes.json").read_text())
        assert set(declared) <= {"outcomes", "cannot", "elsewhere", "about"}, folder.name
        outcomes = set(declared["outcomes"])
        cannot = set(declared.get("cannot") or {})
        elsewhere = declared.get("elsewhere") or {}
        assert outcomes <= set(STATUSES), folder.name
        assert outcomes | cannot == set(STATUSES) and not outcomes & cannot, (
            f"{folder.name}: every status is either an outcome (with a case) or says why it cannot happen")
        assert set(elsewhere) <= outcomes, f"{folder.name}: elsewhere names outcomes the check does not give"
        for status, where in elsewhere.items():
            file, _, name = where.partition("::")
            assert file.startswith("tests/") and re.search(rf"^def {re.escape(name)}\(",
                                                            (REPO / file).read_text(), re.M), (
                f"{folder.name}: {status} is reached elsewhere by {where}, which does not exist")
        reached = {json.loads(p.read_text())["expect"]["status"] for p in folder.glob("*.json")
                   if p.name != "outcomes.json"}
        assert not reached & set(elsewhere), (
            f"{folder.name}: {sorted(reached & set(elsewhere))} have cases now: drop them from elsewhere")
        assert reached | set(elsewhere) == outcomes, (
            f"{folder.name}: declared {sorted(outcomes)}, cases reach {sorted(reached)}, elsewhere "
            f"{sorted(elsewhere)}")


# Checks outside the registry that have a table: the record the run writes for a host it cannot reach.
NOT_IN_REGISTRY = {"connect": "the run's own record for a host it could not reach (host_error_record)"}
# Checks (or records) the registry declares that have no outcome table yet, each with why: the gap is listed, not
# hidden. Their outcomes are reached by the Python tests named here; move them into cases and drop the line. A
# check's name stands for all of its records.
NO_TABLE_YET = {
    "multinode": "a torchrun worker across hosts (tests/test_collectives.py, the lab's multinode tests); no case "
                 "kind runs torchrun yet",
    "perf": "perf.matmul, perf.copy and perf.pcie measure a torch device (tests/test_device_perf.py runs them on "
            "tests/fake_accelerator); no case kind loads the fake accelerator yet",
}


def records_of(check: str, script: Path | None) -> set[str]:
    """The records ``check.x`` a script names as string literals (memory.shm, health.ecc, perf.copy), itself or in
    the vendors' host-side modules it runs (health.ecc is NVIDIA's and Ascend's)."""
    if script is None:
        return set()
    from accelstack.vendors import vendors

    texts = [script.read_text()] + [path.read_text() for path in (v.hostside_module() for v in vendors()) if path]
    return {name for text in texts for name in re.findall(rf'"({re.escape(check)}\.[a-z_]+)"', text)}


def test_every_registry_check_has_an_outcome_table_or_says_why_not() -> None:
    """The table lists every check the registry declares, or each record a check's script writes (memory.shm,
    health.ecc), or a line in NO_TABLE_YET; a folder that names no declared check is a typo."""
    registry = load_registry()
    units = set()
    for validator in registry:
        for check in validator.checks:
            units |= records_of(check, validator.path) or {check}
    assert {"devices", "versions", "clock", "memory.shm", "health.ecc", "perf.copy"} <= units  # it was read
    folders = {p.name for p in OUTCOMES.iterdir() if p.is_dir()}
    exempt = {u for u in units if u in NO_TABLE_YET or u.split(".")[0] in NO_TABLE_YET}
    missing = sorted(units - folders - exempt)
    assert not missing, f"checks/records with no outcome table and no line in NO_TABLE_YET: {missing}"
    stale = sorted(k for k in NO_TABLE_YET if k in folders or any(f.startswith(k + ".") for f in folders))
    assert not stale, f"in NO_TABLE_YET but they have a table now: {stale}"
    declared = set(all_checks(registry))
    unknown = sorted(k for k in NO_TABLE_YET if k not in units and k not in declared)
    assert not unknown, f"NO_TABLE_YET names what the registry does not declare: {unknown}"
    strays = sorted(f for f in folders if f not in units and f not in declared and f not in NOT_IN_REGISTRY)
    assert not strays, f"outcome folders that name no check or record the registry declares: {strays}"


def test_the_runner_sees_a_wrong_expectation(tmp_path: Path) -> None:
    """The runner is not a rubber stamp: the same capture with the opposite expectation is caught."""
    case = tmp_path / "devices" / "case.json"
    case.parent.mkdir()
    case.write_text(json.dumps({"kind": "document", "capture": H100_RUN,
                                "capture_check": "devices", "config": {"vendor": "nvidia", "expect_devices": 8},
                                "expect": {"status": "pass"}}))
    expect, record = run_case(case, tmp_path, lambda: None)
    assert record.status == "fail" != expect["status"]


def test_a_fault_edit_that_misses_and_an_unknown_validator_fail_the_case(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="would prove nothing"):
        substitute({"capture": H100_RUN, "replace": [["<no such text>", "x"]]}, {})
    case = tmp_path / "devices" / "case.json"
    case.parent.mkdir()
    case.write_text(json.dumps({"kind": "script", "validator": "devicez", "expect": {"status": "pass"}}))
    with pytest.raises(pytest.fail.Exception, match="no validator script 'devicez' in the registry"):
        run_case(case, tmp_path, lambda: None)


# ----- lab states: the same outcomes on real sshd hosts, faults injected by real means -----

def lab_inventory(lab: Any, tmp_path: Path, per_host: dict[str, dict[str, Any]]) -> str:
    import yaml

    doc = yaml.safe_load(Path(lab.inventory).read_text())
    for name, extra in per_host.items():
        doc["hosts"][name].update(extra)
    path = tmp_path / "lab.yml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_lab_storage_outcomes_and_one_connect_record_for_a_host_without_sshd(healthy_lab: Any,
                                                                              tmp_path: Path) -> None:
    """lab1 checkpoints on its /data tmpfs as the lab inventory says (pass); lab2's inventory says lustre (fail,
    naming the tmpfs); lab3's folder does not exist (fail, and still does not exist after the check); lab4's
    sshd is stopped (one connect error, no per-check records)."""
    from accelstack.engines.ssh.run import validate_inventory
    from accelstack.inventory import load_inventory
    from accelstack_lab import Lab

    lab: Lab = healthy_lab
    path = lab_inventory(lab, tmp_path, {"lab2": {"checkpoint_fs": "lustre"},
                                         "lab3": {"checkpoint_dir": "/data/not-mounted/ckpt"}})
    lab.fault("lab4", "sshd-stop")
    inv = load_inventory(path)
    records = validate_inventory(inv, inv.select(), only={"storage"})
    got = {(r.host, r.check): r for r in records}
    assert sorted(got) == [("lab1", "storage"), ("lab2", "storage"), ("lab3", "storage"), ("lab4", "connect")]
    assert got["lab1", "storage"].status == "pass", got["lab1", "storage"].summary
    assert got["lab1", "storage"].metrics["fstype"] == "tmpfs"
    wrong = got["lab2", "storage"]
    assert wrong.status == "fail" and "is on /data (tmpfs from lab-data), not lustre" in wrong.summary
    missing = got["lab3", "storage"]
    assert missing.status == "fail" and "/data would be on /data (tmpfs from lab-data)" in missing.summary
    host3 = lab.load()["lab3"]
    inside = subprocess.run(["nsenter", "-t", str(host3.anchor_pid), "-m", "--", "test", "-e", "/data/not-mounted"])
    assert inside.returncode == 1, "the storage check created the folder it measures"
    down = got["lab4", "connect"]
    assert down.status == "error" and down.evidence["error"] == "HostUnreachable"
    assert down.remedy and f"inv validate --inventory {path} --limit lab4" in down.remedy


def test_lab_storage_fails_on_a_full_disk(healthy_lab: Any, tmp_path: Path) -> None:
    from accelstack.engines.ssh.run import validate_inventory
    from accelstack.inventory import load_inventory

    healthy_lab.fault("lab1", "disk-full")
    path = lab_inventory(healthy_lab, tmp_path, {})
    inv = load_inventory(path)
    [record] = validate_inventory(inv, inv.select("lab1"), only={"storage"})
    assert record.status == "fail" and "No space left on device" in record.summary, record.summary
    assert record.remedy and "free space" in record.remedy
