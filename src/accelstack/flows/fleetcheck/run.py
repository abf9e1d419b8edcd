"""The nightly fleet check: validate every inventory, compare with the baseline, write every report, drain.

Exit codes: 0 healthy; 1 a host failed a check or regressed against the baseline (or the drain breaker
tripped); 2 hosts could not be checked (and none failed). A host in several inventories is checked once, in the
first. A bandwidth drop beyond the baseline's band is re-run once (the same check, on that host) and counts only
if the re-run drops too. Each run's healthy figures then join the baseline (the last few per host and check).

``--drain-cmd`` runs for each host that failed or regressed, never for a host whose only problem is ``error``:
an unreachable node is not evidence of a bad node, and draining on it would let one network blip empty a
partition. A circuit breaker (as NVSentinel's) bounds the damage of a bad run: past ``--max-drain`` hosts to
drain (default 10 % of the hosts checked, at least 1), none is drained, the run says why and exits 1, and a
person decides. Every drain is recorded in the run folder (``drains.jsonl``) and so in the history.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...engines.base import DrainResult, run_drain_template
from ...errors import AccelstackError, ConfigError
from ...history import History
from ...report import ReportData, render_html, render_json, render_junit, render_prom, write_atomic
from ...report.model import RERUN_FILE, actionable, verdict
from ...results.baseline import (
    Regression,
    baseline_from_records,
    baseline_path,
    confirm_regressions,
    find_regressions,
    load_baseline,
    needs_rerun,
    save_baseline,
)
from ...results.metrics import CLUSTER_HOST
from ...results.records import Record, RunWriter, error_record, read_meta
from ...validate.registry import load_declarations

REPORT_FILES = {"junit.xml": render_junit, "report.html": render_html, "accelstack.prom": render_prom,
                "summary.json": render_json}
# Slurm caps a node's reason; a short reason also keeps the drain command line readable in logs.
REASON_MAX = 200
# Each failed check's cause (its summary) is cut to this, so that every cause fits in the reason.
CAUSE_MAX = 60
DRAINS_FILE = "drains.jsonl"
FLEET_FILE = "fleet-check.json"
# --max-drain default: this share of the hosts checked, at least one host.
DEFAULT_MAX_DRAIN_PCT = 10.0

# validate(inventory, skip): the records of an inventory's hosts, leaving out ``skip`` (hosts already checked
# in an earlier inventory). rerun(inventory, hosts, check): that check again on those hosts, records returned.
Validate = Callable[[str, frozenset[str]], list[Record]]
Rerun = Callable[[str, list[str], str], list[Record]]
_MAX_DRAIN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(%?)\s*$")


def check_max_drain(value: str | int | None) -> str | int | None:
    """``--max-drain`` as given, once checked: a count of hosts (``2``) or a share of those checked (``10%``).
    Bad input is a ConfigError (exit 3), raised before any host is touched."""
    if value is None or isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    match = _MAX_DRAIN.match(str(value))
    if not match or (not match.group(2) and "." in match.group(1)) or float(match.group(1)) > (
            100 if match.group(2) else math.inf):
        raise ConfigError(f"--max-drain {value!r} is not a number of hosts (2) or a percentage of the hosts "
                          "checked (10%)")
    return str(value).strip()


def max_drain_for(value: str | int | None, hosts_checked: int) -> int:
    """How many hosts one run may drain: a count as given; a percentage (default 10 %) of the hosts checked,
    rounded down, but at least 1."""
    value = check_max_drain(value)
    if isinstance(value, int):
        return value
    if value is not None and not value.endswith("%"):
        return int(value)
    pct = float(value[:-1]) if value else DEFAULT_MAX_DRAIN_PCT
    return max(1, math.floor(hosts_checked * pct / 100.0))


def checked_hosts(records: Iterable[Record]) -> list[str]:
    """The machines a run checked: not the cluster aggregate, not an inventory that could not be read."""
    return sorted({r.host for r in records if r.host != CLUSTER_HOST and not r.host.startswith("inventory:")})


class FleetView:
    """What a person is shown of a fleet check while it runs. The fleet check calls these and prints nothing
    itself; this one shows nothing (a library caller, a test that reads the result). The terminal's, a live
    status line or timestamped log lines: :class:`accelstack.flows.fleetcheck.render.FleetConsole`.

    Messages are plain text: a view escapes them for whatever it renders into."""

    def started(self, run_id: str) -> None:
        """The run folder exists; records are about to arrive."""

    def stopped(self) -> None:
        """The run is over (finished, interrupted or crashed): stop anything live."""

    def step(self, activity: str) -> None:
        """A longer step begins (validating an inventory, re-running a check, draining a host)."""

    def note(self, message: str) -> None:
        """A line worth a person's attention."""

    def record(self, record: Record) -> None:
        """A record was written to the run folder (each once)."""

    def regression(self, regression: Regression) -> None:
        """A regression against the baseline, counted or not (``regression.counts``)."""

    def drain_breaker(self, why: str) -> None:
        """The breaker tripped: nothing is drained, for this reason."""

    def drained(self, result: DrainResult) -> None:
        """The drain command ran for one host."""

    def finished(self, result: FleetResult) -> None:
        """Every report is written; the run's verdict is ``result.code``."""


class FleetReporter:
    """Persist, then show: every record goes to the run folder as it arrives, then to the ``view``.

    Validation streams into it through :meth:`add` (the same call as :class:`accelstack.results.output.Reporter`); the
    records a validate callable returns are added too, and a record already added is not written twice.
    """

    def __init__(self, view: FleetView | None = None) -> None:
        self.view = view or FleetView()
        self.writer: RunWriter | None = None
        self._seen: set[int] = set()
        # Hosts checked in an earlier inventory: a later inventory's records of them are not kept twice.
        self.skip_hosts: frozenset[str] = frozenset()
        self._lock = threading.Lock()

    # -- lifecycle -------------------------------------------------------------------------------------------

    def start(self, writer: RunWriter) -> None:
        self.writer = writer
        self.view.started(writer.run_id)

    def stop(self) -> None:
        self.view.stopped()

    # -- what validation calls -------------------------------------------------------------------------------

    def add(self, record: Record) -> None:
        with self._lock:
            if id(record) in self._seen or record.host in self.skip_hosts:
                return
            self._seen.add(id(record))
            if self.writer is not None:
                self.writer.write(record)
        self.view.record(record)

    def add_all(self, records: Iterable[Record]) -> None:
        for record in records:
            self.add(record)

    def finish(self, extra: Any = None) -> int:
        # validate_inventory may finish its reporter; the fleet check closes the run itself, later.
        return 0

    # -- progress --------------------------------------------------------------------------------------------

    def step(self, activity: str) -> None:
        self.view.step(activity)

    def note(self, message: str) -> None:
        """A plain-text line for the person watching (the view escapes it)."""
        self.view.note(message)


@dataclass
class FleetResult:
    """What one fleet check did, as values: its verdict and what the verdict rests on."""

    run_id: str
    run_folder: Path
    code: int  # 0 healthy; 1 a failure or regression, or the drain breaker tripped; 2 hosts not checked
    records: list[Record]
    regressions: list[Regression]
    baseline_file: Path
    baseline_created: bool = False
    baseline_updated: bool = False
    drain_breaker: dict[str, Any] | None = None  # None without --drain-cmd
    drained: list[DrainResult] = field(default_factory=list)
    reports_dir: Path | None = None
    reports: list[Path] = field(default_factory=list)

    @property
    def breaker_tripped(self) -> bool:
        return bool(self.drain_breaker and self.drain_breaker.get("tripped"))


def host_check_names() -> frozenset[str]:
    """The checks declared in ``validate/checks/``: the only records whose failure is evidence against a host."""
    return frozenset(name for check in load_declarations() for name in check.checks)


def _of_host_check(record: Record, checks: frozenset[str]) -> bool:
    return record.check in checks or record.check.split(".", 1)[0] in checks


def drain_targets(records: list[Record], regressions: list[Regression],
                  checks: frozenset[str] | None = None) -> dict[str, str]:
    """``{host: reason}`` for every host that failed a host check or regressed; ``error`` alone never drains.

    Only a declared check's failure (``checks``, default every check of ``validate/checks/``) drains: that check
    measured the host itself. A record of anything else (a log diagnosis, a fact gathering) may name a cause but
    proves nothing about the node, the rule ``diagnose --host`` follows too (a ``node`` finding is a reason to
    drain only once a host check confirms it)."""
    checks = host_check_names() if checks is None else checks
    reasons: dict[str, list[str]] = {}
    for record in records:
        if record.status == "fail" and record.host != CLUSTER_HOST and _of_host_check(record, checks):
            cause = " ".join(record.summary.split())
            if len(cause) > CAUSE_MAX:
                cause = cause[: CAUSE_MAX - 1] + "\u2026"
            reasons.setdefault(record.host, []).append(f"{record.check} failed" + (f": {cause}" if cause else ""))
    for regression in actionable(regressions):
        if regression.host != CLUSTER_HOST and regression.kind != "new_failure":
            reasons.setdefault(regression.host, []).append(f"regression {regression.short}")
    return {host: _reason(items) for host, items in sorted(reasons.items())}


def _reason(items: list[str]) -> str:
    text = "accelstack: " + "; ".join(dict.fromkeys(items))
    text = " ".join(text.split())  # one line: a newline in a reason would end a scheduler's command
    return text if len(text) <= REASON_MAX else text[: REASON_MAX - 1] + "\u2026"


def _append_jsonl(path: Path, item: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(item, default=str) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def _validate_safely(validate: Validate, inventory: str, skip: frozenset[str]) -> list[Record]:
    try:
        return list(validate(inventory, skip))
    # Broad on purpose: one inventory that breaks mid-run must not cost the report on the others.
    except Exception as err:
        record = error_record(f"inventory:{inventory}", "validate", err)
        if not isinstance(err, AccelstackError):
            record.summary = f"{type(err).__name__}: {err}"
        return [record]


def _rerun_drops(regressions: list[Regression], records: list[Record], inventory_of: dict[str, str],
                 rerun: Rerun, writer: RunWriter, progress: FleetReporter) -> list[Record]:
    """Each dropped check once more, per inventory and check (all its dropped hosts together); the records
    go to the run folder's ``rerun.jsonl``, apart from the run's own."""
    wanted: dict[tuple[str, str], list[str]] = {}
    for regression in regressions:
        if needs_rerun(regression) and regression.host in inventory_of:
            hosts = wanted.setdefault((inventory_of[regression.host], regression.check), [])
            if regression.host not in hosts:
                hosts.append(regression.host)
    found: list[Record] = []
    for (inventory, check), hosts in sorted(wanted.items()):
        progress.step(f"re-running {check} on {', '.join(hosts)} to confirm a bandwidth drop")
        try:
            again = list(rerun(inventory, hosts, check))
        except Exception as err:  # an unconfirmed drop stays unconfirmed; the run and its report go on
            progress.note(f"re-run of {check} on {', '.join(hosts)} failed: {err}")
            continue
        for record in again:
            if record.host in hosts and record.check == check:
                record.run_id = writer.run_id
                _append_jsonl(writer.path / RERUN_FILE, record.to_dict())
                found.append(record)
    return found


def fleet_check(inventories: list[str], *, validate: Validate, drain_cmd: str | None,
                reports_dir: Path, busbw_drop_pct: float, progress: FleetReporter | None = None,
                runs_base: Path | None = None, rerun: Rerun | None = None,
                max_drain: str | int | None = None,
                drain: Callable[[str, str], DrainResult] | None = None) -> FleetResult:
    """Validate each inventory, write one run and every report, drain bad hosts; what it did, with the exit
    code (0, 1 or 2) as ``code``. It shows nothing itself: ``progress.view`` does, as the run goes.

    ``validate`` may stream records into ``progress.add`` as they arrive and return them too; records it only
    returns are written when it returns. ``rerun`` confirms bandwidth drops (without it, a drop counts as
    found). With no baseline yet, a healthy run becomes the baseline; later runs add their healthy figures.
    ``drain(host, reason)``, when given, drains instead of ``drain_cmd`` (Slurm: ``scontrol``), under the same
    breaker and into the same ``drains.jsonl``.
    """
    max_drain = check_max_drain(max_drain)
    progress = progress or FleetReporter()
    writer = RunWriter("fleet-check", base=runs_base, meta={"inventories": inventories})
    progress.start(writer)
    try:
        inventory_of: dict[str, str] = {}
        for number, inventory in enumerate(inventories, 1):
            progress.step(f"validating {inventory} ({number}/{len(inventories)})")
            skip = frozenset(inventory_of)
            progress.skip_hosts = skip
            progress.add_all(_validate_safely(validate, inventory, skip))
            progress.skip_hosts = frozenset()
            for record in writer.records:
                inventory_of.setdefault(record.host, inventory)
        writer.close()
        records = writer.records

        progress.step("comparing with the baseline")
        baseline_file = baseline_path(runs_base)
        baseline = load_baseline(baseline_file)
        regressions = find_regressions(records, baseline, busbw_drop_pct)
        if rerun is not None and any(needs_rerun(r) for r in regressions):
            again = _rerun_drops(regressions, records, inventory_of, rerun, writer, progress)
            assert baseline is not None  # a drop needs a baseline
            regressions = confirm_regressions(regressions, again, baseline.excluding(writer.run_id),
                                              busbw_drop_pct, attempted={r.host for r in regressions if needs_rerun(r)})
        for regression in regressions:
            progress.view.regression(regression)
        code = verdict(records, regressions)
        extra: dict[str, Any] = {"inventories": inventories, "busbw_drop_pct": busbw_drop_pct,
                                 "baseline_created": False, "baseline_updated": False, "drained": [],
                                 "drain_breaker": None}
        counted = {(r.host, r.check) for r in actionable(regressions) if r.kind == "busbw_drop"}
        drained: list[DrainResult] = []
        if baseline is None and code == 0:
            save_baseline(baseline_from_records(records, source_run=writer.run_id), baseline_file)
            extra["baseline_created"] = True
            progress.note(f"no baseline yet: this healthy run is now the baseline ({baseline_file})")
        elif baseline is None:
            progress.note("no baseline yet, and this run is not healthy: `inv baseline --from RUN` sets one")
        else:
            # The run's healthy figures join the baseline (its last few per host and check): a regressed
            # figure does not, so a slow host cannot drag its own baseline down.
            save_baseline(baseline.add_run(records, writer.run_id, skip=counted), baseline_file)
            extra["baseline_updated"] = True

        if drain_cmd or drain is not None:
            targets = drain_targets(records, regressions)
            checked = checked_hosts(records)
            limit = max_drain_for(max_drain, len(checked))
            if len(targets) > limit:
                why = (f"{len(targets)} host(s) to drain, more than --max-drain {limit} "
                       f"({max_drain or f'{DEFAULT_MAX_DRAIN_PCT:g}%'} of {len(checked)} host(s) checked): "
                       "drained none; a fault this wide is more likely the fleet check's own or the network's "
                       "than every node's. Look at the report, then drain by hand or re-run with a larger "
                       "--max-drain")
                extra["drain_breaker"] = {"tripped": True, "max_drain": limit, "hosts_checked": len(checked),
                                          "targets": targets, "reason": why}
                progress.view.drain_breaker(why)
                code = max(code, 1)
            else:
                extra["drain_breaker"] = {"tripped": False, "max_drain": limit, "hosts_checked": len(checked)}
                for host, reason in targets.items():
                    progress.step(f"draining {host}")
                    result = drain(host, reason) if drain is not None else \
                        run_drain_template(drain_cmd or "", host, reason)
                    result = dataclasses.replace(result, run_id=writer.run_id)
                    _append_jsonl(writer.path / DRAINS_FILE, result.to_dict())
                    extra["drained"].append(result.to_dict())
                    drained.append(result)
                    progress.view.drained(result)
        write_atomic(writer.path / FLEET_FILE, json.dumps(
            {**extra, "regressions": [r.to_dict() for r in regressions]}, indent=2, default=str) + "\n")

        progress.step("writing reports")
        with History(runs_base) as history:
            points = history.busbw_history()
        data = ReportData(run_id=writer.run_id, records=records, meta=read_meta(writer.path),
                          regressions=regressions, baseline_run=baseline.describe() if baseline else None,
                          busbw_history=points, extra=extra)
        written = []
        for name, renderer in REPORT_FILES.items():
            write_atomic(reports_dir / name, renderer(data))
            written.append(reports_dir / name)
        outcome = FleetResult(run_id=writer.run_id, run_folder=writer.path, code=code, records=records,
                              regressions=regressions, baseline_file=baseline_file,
                              baseline_created=extra["baseline_created"],
                              baseline_updated=extra["baseline_updated"],
                              drain_breaker=extra["drain_breaker"], drained=drained, reports_dir=reports_dir,
                              reports=written)
        progress.view.finished(outcome)
        return outcome
    finally:
        # No writer.close() here: on Ctrl-C or a crash the run must stay without `finished` (interrupted),
        # and every record it got is already flushed to disk.
        progress.stop()
