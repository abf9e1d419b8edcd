"""Check declarations (``accelstack/validate/checks/``): each check is declared once, and help, the README's table,
``--only``, the control-side judges and ``diagnose --host`` come from the declarations.

The declarations are held to what they describe: the scripts they name (and every script is named), the host
config keys the scripts read, the sections of ``data/thresholds.yml``, the diagnosis catalog's causes. The proof
that a new check is three files adds one the way a contributor would, in copies of the two folders.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from accelstack.diagnose.catalog import CAUSES, load_catalog
from accelstack.diagnose.causes import load_causes
from accelstack.diagnose.confirm import confirming_checks
from accelstack.engines.ssh.remote import command_for
from accelstack.errors import ConfigError
from accelstack.inventory import load_inventory
from accelstack.results.records import Record
from accelstack.stacks.context import resolve_contexts
from accelstack.validate.checks import (
    README_BEGIN,
    RUN_KEYS,
    TIERS,
    Check,
    only_help,
    readme_table,
    tier_help,
    with_readme_table,
)
from accelstack.validate.checks import __main__ as checks_main_module
from accelstack.validate.checks.__main__ import main as checks_main
from accelstack.validate.config import host_config
from accelstack.validate.judge import (
    judge_devices,
    judge_memory,
    judge_multinode_bandwidth,
    judge_record,
    judge_single_node_bandwidth,
    parse_document,
    to_record,
)
from accelstack.validate.registry import (
    all_checks,
    declarations_dir,
    judge_for,
    load_declarations,
    load_registry,
    select,
    validators_dir,
)
from accelstack.validate.thresholds import load_thresholds

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
REGISTRY = load_registry()


def scripts() -> list[Path]:
    return sorted(p for p in validators_dir().glob("*.py") if not p.name.startswith("_"))


def host_config_keys() -> set[str]:
    """Every key host_config gives, on the NVIDIA (device rows included), Ascend and cpu example inventories."""
    keys: set[str] = set()
    for name in ("gpu8", "npu8", "local"):
        inventory = load_inventory(str(REPO / "inventories" / f"{name}.yml"))
        for ctx in resolve_contexts(inventory.select(None), run_preflight=False).values():
            keys |= set(host_config(ctx))
    return keys


def keys_read(script: Path) -> set[str]:
    """The config keys a script reads by name (``config.get("x")``, ``config["x"]``)."""
    return set(re.findall(r'config(?:\.get\(|\[)"([a-z_]+)"', script.read_text()))


# ----- the declarations against what they describe -----

def test_every_script_is_declared_next_to_its_name_and_points_at_its_declaration() -> None:
    declared = {v.script: v for v in REGISTRY if v.script is not None}
    assert {p.name for p in scripts()} == set(declared), "a script no check declares, or a declared one missing"
    for script in scripts():
        module = Path(declared[script.name].declared_in)
        assert module.parent == declarations_dir() and module.stem == script.stem, (
            f"{script.name} is declared in {module}: declare it in checks/{script.name}")
        head = script.read_text().splitlines()[:4]
        assert f"# Declared in accelstack/validate/checks/{script.name} " in "\n".join(head) + " ", (
            f"{script.name} does not point at its declaration in its first lines")
        assert "accelstack-validator:" not in script.read_text(), "the old header would be a second declaration"


def test_declarations_are_well_formed_and_every_record_has_one_owner() -> None:
    assert {"devices", "versions", "clock", "memory", "allreduce", "allgather", "multinode", "health"} <= \
        set(all_checks(REGISTRY))
    for check in REGISTRY:
        assert not check.problems(), (check.declared_in, check.problems())
    for name in ("devices", "memory.devices", "health.ecc", "allreduce", "perf.pcie", "versions.torch"):
        owners = [v.name for v in REGISTRY if v.owns(name)]
        assert len(owners) == 1, (name, owners)


def test_a_declared_config_key_is_one_host_config_gives_and_a_script_declares_what_it_reads() -> None:
    given = host_config_keys()
    assert {"vendor", "device_rows", "checkpoint_dir", "sizes"} <= given  # the inventories were read
    by_script: dict[str, set[str]] = {}
    for check in REGISTRY:
        unknown = set(check.config) - given - set(RUN_KEYS)
        assert not unknown, f"{check.declared_in}: config names keys host_config does not give: {sorted(unknown)}"
        if check.script is not None:
            by_script.setdefault(check.script, set()).update(check.config, RUN_KEYS)
    for script in scripts():
        undeclared = (keys_read(script) & given) - by_script[script.name]
        assert not undeclared, f"{script.name} reads host config keys its declaration does not name: {undeclared}"


def test_threshold_keys_are_sections_of_the_thresholds_file() -> None:
    from accelstack.validate.thresholds import shipped_files

    sections = {section for shipped in shipped_files() for section in shipped.doc}
    for check in REGISTRY:
        assert set(check.thresholds) <= sections, (check.name, set(check.thresholds) - sections)
    assert {v.name for v in REGISTRY if "rows" in v.thresholds} == {"allreduce,allgather", "multinode"}


def test_judges_come_from_the_declarations() -> None:
    assert judge_for(REGISTRY, "devices") is judge_devices
    assert judge_for(REGISTRY, "memory.devices") is judge_memory and judge_for(REGISTRY, "memory.shm") is judge_memory
    assert judge_for(REGISTRY, "allreduce") is judge_for(REGISTRY, "allgather") is judge_single_node_bandwidth
    # multinode's runner judges each node's record with its declared judge, against the multi-node allreduce rows;
    # these checks judge themselves on the host.
    assert judge_for(REGISTRY, "multinode") is judge_multinode_bandwidth and judge_for(REGISTRY, "health.ecc") is None
    assert judge_for(REGISTRY, "no_such_check") is None
    below = Record(host="n1", check="allgather", status="pass", summary="ok", metrics={"busbw_gbps": 1.0, "ranks": 8})
    judged = judge_record(below, {"accelerator": "H100"}, load_thresholds(), judge_for(REGISTRY, below.check))
    assert judged.summary.endswith("not judged: no threshold row for this accelerator, scope and rank count")
    below = Record(host="n1", check="allreduce", status="pass", summary="ok", metrics={"busbw_gbps": 1.0, "ranks": 8})
    judged = judge_record(below, {"accelerator": "H100"}, load_thresholds(), judge_for(REGISTRY, below.check))
    assert judged.status == "fail" and "460" in judged.summary
    # A multi-node record is named multinode and judged as the allreduce it ran, at multi-node scope.
    thresholds = load_thresholds()
    row = next(r for r in thresholds.rows if r.scope == "multi-node" and r.accelerator == "A100")
    assert row.collective == "allreduce" and row.min_busbw_gbps
    across = Record(host="n1", check="multinode", status="pass", summary="ok",
                    metrics={"busbw_gbps": row.min_busbw_gbps / 10, "ranks": 16})
    judge = judge_for(REGISTRY, "multinode")
    assert judge is not None
    judged = judge(across, {"accelerator": "A100"}, thresholds)
    assert judged.status == "fail" and judged.evidence["threshold"] == row.describe(), judged.summary


# ----- diagnosis: causes and the checks that confirm them -----

def catalog_entries() -> list[tuple[str, str, str | None]]:
    catalog = load_catalog()
    entries = [(sig.id, sig.cause, sig.confirm_with) for sig in catalog.signatures]
    return entries + [(code, e["cause"], e["confirm_with"]) for code, e in catalog.error_codes.items()]


def test_confirms_name_real_causes_and_every_node_cause_has_a_check() -> None:
    # A node finding is drained only once a host check confirms it, so every node cause needs one; a job's own
    # error (program-error, unclassified) has none to run.
    for check in REGISTRY:
        assert set(check.confirms) <= set(CAUSES), (check.declared_in, set(check.confirms) - set(CAUSES))
    node = [cause for cause, entry in load_causes().items() if entry.actor == "node"]
    unconfirmed = [cause for cause in node if not confirming_checks([cause], REGISTRY)]
    assert not unconfirmed, f"node causes no check is declared to confirm (diagnose --host would run nothing): {unconfirmed}"


def test_every_catalog_entry_names_a_declared_check_that_confirms_its_cause() -> None:
    declared = {c: v for v in REGISTRY for c in v.checks}
    for entry, cause, check in catalog_entries():
        if check is None:  # a table row's or a code's check is the first one declared for its cause
            continue
        assert check in declared, f"{entry}: confirm_with {check!r} is no declared check"
        assert cause in declared[check].confirms, (
            f"{entry}: {check} is not declared to confirm {cause} (add it to {declared[check].declared_in})")


def test_diagnose_runs_the_checks_declared_for_the_causes_root_cause_first() -> None:
    assert confirming_checks(["out-of-memory"], REGISTRY) == ["memory"]
    assert confirming_checks(["collective-timeout"], REGISTRY) == ["collective_init", "allreduce", "allgather",
                                                                    "storage"]
    both = confirming_checks(["xid-fatal", "out-of-memory"], REGISTRY)
    assert both[-1] == "memory" and {"devices", "health"} <= set(both[:-1])
    assert confirming_checks([], REGISTRY) == [] and confirming_checks(["not-a-cause"], REGISTRY) == []
    select(REGISTRY, "full", set(confirming_checks(CAUSES, REGISTRY)))  # every one is a name --only takes


# ----- what is derived: help, the README table -----

def test_help_lists_every_check_in_its_tier() -> None:
    from accelstack.tasks.validate import validate

    text = tier_help(REGISTRY)
    assert text.startswith("health (")
    health, _, rest = text.partition("), quick (")
    quick, _, rest = rest.partition("), standard (")
    parts = {"health": health, "quick": quick, "standard": rest}
    for check in REGISTRY:
        for name in check.checks:
            assert re.search(rf"\b{name}\b", parts[check.tier]), (name, check.tier, text)
            others = [tier for tier, part in parts.items() if tier != check.tier and re.search(rf"\b{name}\b", part)]
            assert not others, (name, others)
    assert "default" in rest and "full (" in rest
    assert set(only_help(REGISTRY).split(": ", 1)[1].split(", ")) == set(all_checks(REGISTRY))
    assert validate.help["tier"] == text and validate.help["only"] == only_help(REGISTRY)


def test_node_check_help_lists_the_host_checks_of_its_three_tiers_health_by_default() -> None:
    from accelstack.tasks.nodecheck import node_check

    host = [v for v in REGISTRY if v.scope == "host"]
    assert node_check.help["tier"] == tier_help(host, tiers=("health", "quick", "standard"), default="health")
    assert node_check.help["tier"].startswith("health (") and "full" not in node_check.help["tier"]
    assert node_check.help["tier"].split("), quick (")[0].endswith("; default")
    assert "multinode" not in node_check.help["only"] and "clock" not in node_check.help["only"]
    assert "devices" in node_check.help["only"] and "storage" in node_check.help["only"]


def test_the_readme_table_is_what_the_declarations_give() -> None:
    text = README.read_text(encoding="utf-8")
    assert with_readme_table(text, readme_table(REGISTRY)) == text, (
        "README.md's table of checks is stale: run `python -m accelstack.validate.checks --readme`")
    for check in REGISTRY:
        assert f"| {check.tier} | {check.help} |" in text


def test_the_readme_generator_rewrites_and_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{README_BEGIN}\n| old |\n<!-- checks:end -->\n\nafter\n")
    assert checks_main(["--readme", str(readme), "--check"]) == 1
    # `--check` alone checks the project's README (it once printed the table and passed, whatever the README said).
    monkeypatch.setattr(checks_main_module, "project_root", lambda: tmp_path)  # the project's README is `readme`
    assert checks_main(["--check"]) == 1
    assert "python -m accelstack.validate.checks --readme" in capsys.readouterr().err
    assert checks_main(["--readme", str(readme)]) == 0
    assert readme.read_text() == f"# x\n\n{README_BEGIN}\n{readme_table(REGISTRY)}<!-- checks:end -->\n\nafter\n"
    assert checks_main(["--readme", str(readme), "--check"]) == 0 and checks_main(["--check"]) == 0
    readme.write_text("no markers\n")
    assert checks_main(["--readme", str(readme)]) == 3 and "checks:begin" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="markers"):
        with_readme_table("no markers", "")


def test_a_wrong_declaration_is_refused_before_any_host_is_touched(tmp_path: Path) -> None:
    def refused(text: str, match: str) -> None:
        folder = tmp_path / f"decl{len(list(tmp_path.iterdir()))}"
        folder.mkdir()
        (folder / "x.py").write_text("from . import Check\n" + text)
        with pytest.raises(ConfigError, match=match):
            load_registry(validators_dir(), folder)

    refused("CHECKS = (Check(('x',), 'quick', help='x', script='nope.py'),)\n", r"x\.py: check x names script nope")
    refused("CHECKS = (Check(('x',), 'quick', help='x', confirms='rdma'),)\n", "confirms must be a tuple")
    refused("CHECKS = (Check(('x',), 'quick', help='two\\nlines'),)\n", "help must be one line")
    refused("CHECKS = (Check(('x',), 'quick', help='x', script='env.py'), "
            "Check(('y', 'x'), 'full', help='y', script='env.py'))\n", r"declared twice: x")
    # A check runs its script, or its declared runner: one with neither would measure nothing.
    refused("CHECKS = (Check(('x',), 'quick', help='x'),)\n", "needs a runner")
    refused("CHECKS = (Check(('x',), 'quick', help='x', scope='cluster', script='ports.py'),)\n", "needs a runner")
    refused("CHECKS = (Check(('x',), 'quick', help='x', runner='no dots here'),)\n", "is not module:function")
    refused("CHECKS = (Check(('x',), 'quick', help='x', runner='accelstack.engines.ssh.cluster:no_such'),)\n",
            r"x\.py: check x: runner 'accelstack.engines.ssh.cluster:no_such' does not resolve")
    refused("CHECKS = (Check(('x',), 'quick', help='x', script='env.py', runner='accelstack.engines.ssh.cluster:run_clock'),)"
            "\n", "a runner is for cluster checks")
    refused("CHECKS = (Check(('x',), 'quick', help='x', script='env.py', engines=('k8s',)),)\n", "not one of ssh, slurm")
    refused("CHECKS = (Check(('x',), 'quick', help='x', script='env.py', needs_peers=True),)\n", "for cluster checks")
    refused("CHECK = Check(('x',), 'quick', help='x')\n", r"CHECKS = \(Check")
    refused("raise RuntimeError('broken')\n", "does not load: RuntimeError: broken")


# ----- the proof: a new check is three files -----

NEW_SCRIPT = '''#!/usr/bin/env python3
# Declared in accelstack/validate/checks/pcie_bandwidth.py (tier, python, timeout, config keys, judge, help).
"""A contributor's new check: reports a figure the control side judges."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import main_entry, record


def main(config):
    return [record("pcie_bandwidth", "pass", "measured", metrics={"gbps": float(config.get("pcie_gbps") or 0)})]


if __name__ == "__main__":
    main_entry("pcie_bandwidth", main)
'''
NEW_DECLARATION = '''"""Declares hostside/validators/pcie_bandwidth.py."""

from . import Check


def judge_floor(record, config, thresholds):
    if record.status == "pass" and record.metrics["gbps"] < 20:
        record.status = "fail"
        record.summary += "; below 20 GB/s"
    return record


CHECKS = (
    Check(("pcie_bandwidth",), "standard", script="pcie_bandwidth.py", python="system", timeout=30,
          help="host-to-device bandwidth of every PCIe link", config=("vendor",), judge=judge_floor,
          confirms=("rdma",)),
)
'''


def with_new_check(tmp_path: Path, name: str, script: str, declaration: str) -> tuple[Path, Path]:
    """Copies of the shipped validators and declarations with one check added the way a contributor adds it: its
    script and its declaration, nothing else."""
    validators = tmp_path / "validators"
    declarations = tmp_path / "checks"
    shutil.copytree(validators_dir(), validators, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(declarations_dir(), declarations, ignore=shutil.ignore_patterns("__pycache__"))
    (validators / name).write_text(script)
    (declarations / name).write_text(declaration)
    return validators, declarations


def test_a_new_check_is_a_script_a_declaration_and_its_cases(tmp_path: Path) -> None:
    validators, declarations = with_new_check(tmp_path, "pcie_bandwidth.py", NEW_SCRIPT, NEW_DECLARATION)
    registry = load_registry(validators, declarations)
    assert len(registry) == len(REGISTRY) + 1 and len(load_declarations(declarations)) == len(registry)

    # --only takes it (and still refuses what nobody declared); --tier standard runs it, quick does not.
    [new] = select(registry, "quick", {"pcie_bandwidth"})
    assert new.path == validators / "pcie_bandwidth.py" and new.declared_in == str(declarations / "pcie_bandwidth.py")
    assert new in select(registry, "standard") and new not in select(registry, "quick")
    with pytest.raises(ConfigError, match="pcie_bandwidth"):  # the hint lists it among the checks
        select(registry, "standard", {"pcie_bandwdith"})

    # The help and the README table name it; the README gains exactly its row.
    assert "pcie_bandwidth" in tier_help(registry).partition("), standard (")[2]
    assert "pcie_bandwidth" in only_help(registry)
    readme = README.read_text(encoding="utf-8")
    row = "| `pcie_bandwidth` | standard | host-to-device bandwidth of every PCIe link |\n"
    assert readme_table(registry).replace(row, "") == readme_table(REGISTRY)
    assert with_readme_table(readme, readme_table(registry)).replace(row, "") == readme

    # diagnose --host runs it for the cause it confirms.
    assert "pcie_bandwidth" in confirming_checks(["rdma"], registry)

    # Run as the run runs it, its records are judged by the judge its declaration names.
    for gbps, status in ((25, "pass"), (5, "fail")):
        config = {"host": "n1", "vendor": "cpu", "pcie_gbps": gbps}
        command = command_for(str(new.path), sys.executable, config, timeout=30, source_env=False)
        proc = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, timeout=60)
        [item] = parse_document(proc.stdout)
        record = to_record("n1", item, command=command)
        judged = judge_record(record, config, load_thresholds(), judge_for(registry, record.check))
        assert judged.status == status, json.dumps(item)

    # The shipped registry is untouched: nothing but the two copies changed.
    assert "pcie_bandwidth" not in all_checks(load_registry())


CLUSTER_SCRIPT = '''#!/usr/bin/env python3
# Declared in accelstack/validate/checks/peer_names.py, whose runner starts it on every joined host.
"""A contributor's new cluster check: every host resolves every peer's address."""

import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import main_entry, record


def main(config):
    peers = config.get("peers") or []
    bad = []
    for peer in peers:
        try:
            socket.getaddrinfo(peer, None)
        except socket.gaierror as err:
            bad.append(peer + " (" + str(err) + ")")
    if bad:
        return [record("peer_names", "fail", "does not resolve: " + ", ".join(bad))]
    return [record("peer_names", "pass", "%d peer address(es) resolve" % len(peers), metrics={"peers": len(peers)})]


if __name__ == "__main__":
    main_entry("peer_names", main)
'''
CLUSTER_DECLARATION = '''"""Declares hostside/validators/peer_names.py, a cluster check: its runner runs it on every joined host with
the addresses of all of them (and of the inventory's `peer_names_also`)."""

import json
import shlex

from accelstack.engines.ssh.remote import SYSTEM_PYTHON
from accelstack.validate.judge import parse_document, to_record

from . import Check


def run_peer_names(check, run):
    peers = [m.ctx.host.address for m in run.members] + list(run.vars.get("peer_names_also") or [])
    records = []
    for member in run.members:
        config = json.dumps({"host": member.name, "peers": peers})
        command = " ".join([SYSTEM_PYTHON, shlex.quote(member.remote + "/" + check.script), shlex.quote(config)])
        result = member.transport.run(command, timeout=check.timeout)
        records += [to_record(member.name, item, command=command) for item in parse_document(result.stdout)]
    return records


CHECKS = (
    Check(("peer_names",), "standard", script="peer_names.py", scope="cluster", timeout=30, engines=("ssh",),
          help="every host resolves every peer's address", runner=run_peer_names),
)
'''


def test_a_new_cluster_check_is_three_files_too_and_the_run_names_no_check(tmp_path: Path) -> None:
    """A cluster check declares its runner: the run's cluster phase runs it from the declaration, with the joined
    hosts, beside the shipped cluster checks and in the order of their declared timeouts."""
    from accelstack.engines.ssh.run import validate_hosts
    from accelstack.transport.fanout import FanoutOptions, HostPool

    validators, declarations = with_new_check(tmp_path, "peer_names.py", CLUSTER_SCRIPT, CLUSTER_DECLARATION)
    registry = load_registry(validators, declarations)
    selected = select(registry, "quick", {"peer_names", "clock"})
    assert [v.name for v in selected] == ["clock", "peer_names"]
    assert "peer_names" in tier_help(registry).partition("standard (")[2] and "peer_names" in only_help(registry)

    local = load_inventory("local")
    for also, status in (([], "pass"), (["no-such-host.invalid"], "fail")):
        contexts = resolve_contexts(local.select(), overrides={"peer_names_also": also})
        sink = _Records()
        with HostPool(FanoutOptions(forks=2)) as pool:
            records = validate_hosts(pool, contexts, selected, tier="standard", reporter=sink, folder=validators)
        host = local.select()[0].name
        # Its 30 s timeout is below clock's 60 s: it runs first.
        assert [(r.host, r.check) for r in records] == [(host, "peer_names"), (host, "clock")], records
        assert records[0].status == status and records[1].status == "pass", records
        assert sink.begun == sink.ended == [(host, "peer_names"), (host, "clock")]
        assert sink.records == records
    assert "no-such-host.invalid" in records[0].summary
    assert "peer_names" not in all_checks(load_registry())

    # What made this possible: the run and the host phase name no check; the declarations do (a runner, such as
    # host.versions_records, names its own records).
    import inspect

    from accelstack.engines.ssh import host, run

    for code in (run, host.run_host, host.run_validator, host.run_script, host._below_floor):
        text = inspect.getsource(code)
        named = sorted(c for c in all_checks(REGISTRY) if re.search(rf"[\"']{c}[\"'.]", text))
        assert not named, f"{code.__name__} names check(s) {named}: declare what it needs instead"


class _Records:
    def __init__(self) -> None:
        self.records: list[Record] = []
        self.begun: list[tuple[str, str]] = []
        self.ended: list[tuple[str, str]] = []

    def add_all(self, records: list[Record]) -> None:
        self.records.extend(records)

    def begin(self, host: str, check: str) -> None:
        self.begun.append((host, check))

    def end(self, host: str, check: str) -> None:
        self.ended.append((host, check))


def test_what_the_slurm_engine_runs_is_declared() -> None:
    from accelstack.engines.slurm.run import slurm_checks

    # Every host check, and the cluster checks declaring the slurm engine (multinode); clock and ports are SSH's.
    ran = slurm_checks("standard", None)
    assert [v for v in select(REGISTRY, "standard") if "slurm" in v.engines] == ran
    assert {c for v in ran if v.scope == "cluster" for c in v.checks} == {"multinode"}
    assert {v.name for v in select(REGISTRY, "standard") if v.scope == "host"} <= {v.name for v in ran}
    with pytest.raises(ConfigError, match="runs the host checks and multinode; clock, ports need --engine ssh"):
        slurm_checks("standard", {"ports", "clock", "env"})


def test_the_check_confirming_an_unknown_ascend_code_is_the_declared_one() -> None:
    from accelstack.diagnose import diagnose_lines
    from accelstack.diagnose.causes import confirming_check

    assert confirming_check("unknown-error-code") == confirming_checks(["unknown-error-code"], REGISTRY)[0]
    assert confirming_check("unknown-error-code") == "devices"
    [finding] = diagnose_lines(["[ERROR] RUNTIME(1234,python):2026-11-24-08:00:00 EK9123: something unknown"]).findings
    assert finding.cause == "unknown-error-code" and finding.confirm_with == "devices"
    assert confirming_check("no-such-cause") is None  # a job's own error: no host check to run


def test_only_the_bandwidth_sweeps_are_rerun_below_their_floor() -> None:
    assert {v.name for v in REGISTRY if v.rerun_below_floor} == {"allreduce,allgather"}
    assert {v.name for v in REGISTRY if v.needs_peers} == {"multinode", "ports"}
    assert [v.name for v in REGISTRY if v.owns_join_errors] == ["multinode"]
    assert {v.name for v in REGISTRY if v.runner is not None} == {"clock", "multinode", "ports", "versions"}


def test_tiers_are_the_four_documented() -> None:
    assert TIERS == ("health", "quick", "standard", "full")
    assert Check(("x",), "health", help="x").in_tier("quick") and not Check(("x",), "quick", help="x").in_tier("health")
    # What runs beside jobs is what needs no torch and no device: the declaration is refused otherwise.
    assert any("health-tier" in p for p in Check(("x",), "health", help="x", script="x.py", python="stack").problems())
    assert Check(("x",), "full", help="x").in_tier("full") and not Check(("x",), "full", help="x").in_tier("standard")
