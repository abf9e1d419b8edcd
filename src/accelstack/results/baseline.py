"""Baselines and regressions: what healthy runs measured, how noisy that was, and what a later run lost.

A baseline is a distribution, not one run. Per host and check it holds the figures of the last ``keep``
(default 5) healthy runs: the peak bus bandwidth and the bus bandwidth at each message size, each sample with
the run it came from, plus the newest status and component versions; stored as ``runs/baseline.json``.

A bus bandwidth figure regresses when it drops below the median of its held samples by more than

    max(busbw_drop_pct, 100 x (1 - (low / high) ** NOISE_FACTOR))

where ``low`` and ``high`` are the smallest and largest held samples. ``noise`` is their spread, ``1 - low/high``
(the share the worst healthy run fell short of the best). The band is that spread taken ``NOISE_FACTOR`` (2.5)
times over on a log scale: for a small spread it is about 2.5 times the spread (10 % -> 23 %, 20 % -> 43 %,
22 % -> 46 %, so a 50 % drop still counts), and however noisy a figure (lab multi-node runs swing 4x) it stays
under 100 %, so a collapse still counts. With five samples the spread is on average about 2.3 standard
deviations, so the band is near 6 sigma, and still 3 sigma when the five runs happen to fall close together
(a spread of 1.2 sigma or less: about one window in ten). 2.5 is the smallest factor under which the recorded
gloo series of this machine (tests/data/baseline/, 20 runs) counts no regression with its re-runs: a shared
host's load shifts for a few runs at a time, which 2 mistook for a confirmed 28 % drop. A figure with one sample has no measured noise
and is judged by the percentage alone. Per message size, a figure is judged only once it holds
:data:`MIN_SIZE_SAMPLES` samples (small messages are latency-bound and noisy); the peak always is.
A drop found in a run counts only once a re-run of that check drops too (:func:`confirm_regressions`): the
fleet check re-runs it, and an unconfirmed drop is reported but neither fails the run nor drains.

:func:`find_regressions` also names a new failure (pass/warn then, fail/error now) and a version change.
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import ConfigError
from .metrics import DEFAULT_BUSBW_DROP_PCT, components, peak_busbw, sweep
from .records import Record, runs_dir, utc_now

BASELINE_FILE = "baseline.json"
BASELINE_FORMAT = 2
READABLE_FORMATS = (1, 2)
# The run kinds a baseline may come from when none is named: runs that validated hosts.
VALIDATION_KINDS = ("validate", "fleet-check")
# Healthy runs held per host, check and figure.
DEFAULT_KEEP = 5
# The band is the held spread taken this many times over on a log scale (see the module docstring).
NOISE_FACTOR = 2.5
# Per-size figures are judged once they hold this many samples; the peak is judged from the first.
MIN_SIZE_SAMPLES = 3
HEALTHY = ("pass", "warn")

RegressionKind = Literal["busbw_drop", "new_failure", "version_change"]


# Records that say a host or an inventory could not be checked at all: no check's state to hold as a baseline.
NOT_CHECKS = ("connect", "host")


def not_a_check(record: Record) -> bool:
    return record.check in NOT_CHECKS or record.check.startswith("inventory:")


@dataclass(frozen=True)
class Figure:
    """One figure's healthy samples, oldest first, each as ``(run_id, value)``."""

    samples: tuple[tuple[str, float], ...] = ()

    @property
    def values(self) -> list[float]:
        return [value for _, value in self.samples]

    @property
    def median(self) -> float:
        return float(statistics.median(self.values))

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)

    @property
    def noise_pct(self) -> float:
        """The held samples' spread: how far below the best the worst fell, in %; 0 with one sample."""
        return (1.0 - self.low / self.high) * 100.0 if self.high > 0 else 0.0

    def threshold_pct(self, drop_pct: float) -> float:
        """The drop below the median that counts: the configured one, or the noise band when wider."""
        band = (1.0 - (1.0 - self.noise_pct / 100.0) ** NOISE_FACTOR) * 100.0
        return max(drop_pct, band)

    def add(self, run_id: str, value: float, keep: int) -> Figure:
        kept = [s for s in self.samples if s[0] != run_id] + [(run_id, value)]
        return Figure(tuple(kept[-keep:]))

    def without(self, run_id: str) -> Figure:
        return Figure(tuple(s for s in self.samples if s[0] != run_id))

    def to_list(self) -> list[list[Any]]:
        return [[run_id, value] for run_id, value in self.samples]

    @classmethod
    def from_json(cls, data: Any, run_id: str = "") -> Figure:
        """A list of ``[run_id, value]`` (format 2), or a bare number (format 1, one sample)."""
        if isinstance(data, bool):
            return cls()
        if isinstance(data, (int, float)):
            return cls(((run_id, float(data)),)) if data > 0 else cls()
        samples = []
        for item in data if isinstance(data, list) else []:
            if (isinstance(item, list) and len(item) == 2 and isinstance(item[1], (int, float))
                    and not isinstance(item[1], bool) and item[1] > 0):
                samples.append((str(item[0]), float(item[1])))
        return cls(tuple(samples))


@dataclass(frozen=True)
class BaselineEntry:
    status: str
    peak: Figure = field(default_factory=Figure)
    sizes: dict[int, Figure] = field(default_factory=dict)
    components: dict[str, str] = field(default_factory=dict)

    @property
    def busbw_gbps(self) -> float | None:
        """The median held peak, the level a run is compared with; ``None`` when nothing is held."""
        return self.peak.median if self.peak.samples else None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"status": self.status}
        if self.peak.samples:
            data["busbw_gbps"] = self.peak.to_list()
        sizes = {str(size): figure.to_list() for size, figure in sorted(self.sizes.items()) if figure.samples}
        if sizes:
            data["sizes"] = sizes
        if self.components:
            data["components"] = dict(sorted(self.components.items()))
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], run_id: str = "") -> BaselineEntry:
        sizes = {}
        for size, samples in (data.get("sizes") or {}).items():
            if str(size).isdigit():
                sizes[int(size)] = Figure.from_json(samples, run_id)
        return cls(status=str(data.get("status", "pass")),
                   peak=Figure.from_json(data.get("busbw_gbps"), run_id),
                   sizes=sizes,
                   components={str(k): str(v) for k, v in (data.get("components") or {}).items()})

    def without(self, run_id: str) -> BaselineEntry:
        return dataclasses.replace(self, peak=self.peak.without(run_id),
                                   sizes={size: f.without(run_id) for size, f in self.sizes.items()})


@dataclass
class Baseline:
    source_run: str
    created: str
    hosts: dict[str, dict[str, BaselineEntry]]
    keep: int = DEFAULT_KEEP

    def entry(self, host: str, check: str) -> BaselineEntry | None:
        return self.hosts.get(host, {}).get(check)

    @property
    def runs(self) -> list[str]:
        """Every run some held sample came from, oldest first (run ids start with their UTC time)."""
        found = {run for checks in self.hosts.values() for entry in checks.values()
                 for figure in (entry.peak, *entry.sizes.values()) for run, _ in figure.samples if run}
        return sorted(found | ({self.source_run} if self.source_run else set()))

    def describe(self) -> str:
        runs = self.runs
        if len(runs) <= 1:
            return runs[0] if runs else self.source_run
        return f"{len(runs)} runs, newest {runs[-1]}"

    def excluding(self, run_id: str) -> Baseline:
        """The baseline without ``run_id``'s samples: a run is never compared with itself."""
        hosts = {host: {check: entry.without(run_id) for check, entry in checks.items()}
                 for host, checks in self.hosts.items()}
        return Baseline(self.source_run, self.created, hosts, self.keep)

    def add_run(self, records: Iterable[Record], run_id: str = "",
                skip: Iterable[tuple[str, str]] = ()) -> Baseline:
        """This baseline with a run's healthy figures added (the oldest beyond ``keep`` dropped).

        Healthy: pass or warn, not in ``skip`` (the fleet check passes its confirmed regressions), and not a
        multi-node figure dragged down by another node. A check seen for the first time is held whatever its
        status, so that a later failure of a check that never passed is no "new" failure."""
        skipped = set(skip)
        hosts = {host: dict(checks) for host, checks in self.hosts.items()}
        newest = self.source_run
        for record in records:
            run = run_id or record.run_id
            newest = max(newest, run)
            if not_a_check(record):
                continue
            current = hosts.get(record.host, {}).get(record.check)
            healthy = (record.status in HEALTHY and (record.host, record.check) not in skipped
                       and not fault_is_elsewhere(record))
            if not healthy:
                if current is None:
                    hosts.setdefault(record.host, {})[record.check] = BaselineEntry(
                        status=record.status, components=components(record))
                continue
            entry = current or BaselineEntry(status=record.status)
            peak = entry.peak
            now_peak = peak_busbw(record)
            if now_peak is not None:
                peak = peak.add(run, now_peak, self.keep)
            sizes = dict(entry.sizes)
            for point in sweep(record):
                sizes[point.bytes] = sizes.get(point.bytes, Figure()).add(run, point.busbw_gbps, self.keep)
            hosts.setdefault(record.host, {})[record.check] = BaselineEntry(
                status=record.status, peak=peak, sizes=sizes, components=components(record) or entry.components)
        return Baseline(source_run=newest, created=utc_now(), hosts=hosts, keep=self.keep)

    def to_dict(self) -> dict[str, Any]:
        return {"format": BASELINE_FORMAT, "source_run": self.source_run, "created": self.created,
                "keep": self.keep,
                "hosts": {host: {check: entry.to_dict() for check, entry in sorted(checks.items())}
                          for host, checks in sorted(self.hosts.items())}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Baseline:
        source = str(data.get("source_run", ""))
        hosts = {str(host): {str(check): BaselineEntry.from_dict(entry, source) for check, entry in checks.items()}
                 for host, checks in (data.get("hosts") or {}).items()}
        keep = data.get("keep")
        return cls(source_run=source, created=str(data.get("created", "")), hosts=hosts,
                   keep=keep if isinstance(keep, int) and not isinstance(keep, bool) and keep > 0 else DEFAULT_KEEP)


def empty_baseline(keep: int = DEFAULT_KEEP) -> Baseline:
    return Baseline(source_run="", created=utc_now(), hosts={}, keep=keep)


def baseline_from_records(records: Iterable[Record], *, source_run: str = "", keep: int = DEFAULT_KEEP) -> Baseline:
    """A baseline holding one run. A failed check's bandwidth is no level to hold: only pass/warn keep it."""
    records = list(records)
    source_run = source_run or next((r.run_id for r in records if r.run_id), "")
    return empty_baseline(keep).add_run(records, source_run)


def baseline_from_runs(runs: Iterable[tuple[str, list[Record], list[Record]]], *, keep: int = DEFAULT_KEEP,
                       busbw_drop_pct: float = DEFAULT_BUSBW_DROP_PCT) -> Baseline:
    """Runs folded oldest first, each as ``(run_id, records, rerun_records)``: per host and check, the last
    ``keep`` healthy figures. As in the fleet check, a figure that dropped beyond its band is not held unless
    the run's re-run undid the drop (then it was noise, and the noise is what the band must learn)."""
    held = empty_baseline(keep)
    for run_id, records, reruns in runs:
        regressions = find_regressions(records, held, busbw_drop_pct)
        if reruns:
            regressions = confirm_regressions(regressions, reruns, held, busbw_drop_pct)
        skip = {(r.host, r.check) for r in regressions if r.kind == "busbw_drop" and r.confirmed is not False}
        held = held.add_run(records, run_id, skip=skip)
    return held


def baseline_path(base: Path | None = None) -> Path:
    return runs_dir(base) / BASELINE_FILE


def save_baseline(baseline: Baseline, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(baseline.to_dict(), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def load_baseline(path: Path) -> Baseline | None:
    """The baseline at ``path``; ``None`` when there is none yet."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) else f"not UTF-8 text ({err.reason})"
        raise ConfigError(f"baseline cannot be read: {reason or err}", where=str(path),
                          hint="name a baseline file, or recreate it with `inv baseline`") from None
    try:
        data = json.loads(text)
    except ValueError as err:
        raise ConfigError(f"baseline is not valid JSON: {err}", where=str(path),
                          hint="recreate it with `inv baseline`") from None
    if not isinstance(data, dict) or data.get("format") not in READABLE_FORMATS:
        raise ConfigError(f"baseline is not in format {BASELINE_FORMAT}", where=str(path),
                          hint="recreate it with `inv baseline`")
    try:
        return Baseline.from_dict(data)
    except (AttributeError, TypeError, ValueError):  # a hand-edited or damaged file: its shape is wrong
        raise ConfigError("baseline is damaged: its hosts and figures are not laid out as `inv baseline` writes "
                          "them", where=str(path), hint="recreate it with `inv baseline`") from None


@dataclass(frozen=True)
class Regression:
    host: str
    check: str
    kind: RegressionKind
    then: Any
    now: Any
    # The record's status in the new run: a regression to ``error`` means the host could not be checked.
    now_status: str
    component: str | None = None
    drop_pct: float | None = None
    # busbw_drop only: the held samples' noise, the drop it took to count, how many samples, which size
    # (None: the peak), and what the re-run measured (None: not re-run, e.g. `inv report` of an old run).
    noise_pct: float | None = None
    threshold_pct: float | None = None
    samples: int | None = None
    bytes: int | None = None
    confirmed: bool | None = None
    rerun_now: float | None = None

    @property
    def message(self) -> str:
        where = f"{self.host} {self.check}"
        if self.kind == "busbw_drop":
            at = f" at {self.bytes} bytes" if self.bytes is not None else ""
            text = (f"{where}: busbw{at} {self.then:g} -> {self.now:g} GB/s (-{self.drop_pct:.1f}%, "
                    f"noise {self.noise_pct or 0.0:.1f}% over {self.samples} run(s), "
                    f"counts past -{self.threshold_pct or 0.0:.1f}%)")
            if self.confirmed is True:
                text += f", re-run {self.rerun_now:g} GB/s confirms"
            elif self.confirmed is False:
                rerun = "no figure" if self.rerun_now is None else f"{self.rerun_now:g} GB/s"
                text += f", re-run {rerun}: not confirmed"
            else:
                text += ", not re-run: not counted"
            return text
        if self.kind == "version_change":
            return f"{where}: {self.component} {self.then} -> {self.now}"
        return f"{where}: {self.then} -> {self.now}"

    @property
    def short(self) -> str:
        """The message without host and noise: for a drain reason, which schedulers cap."""
        if self.kind == "busbw_drop":
            at = f" at {self.bytes} B" if self.bytes is not None else ""
            return f"{self.check} busbw{at} -{self.drop_pct or 0.0:.0f}% ({self.then:g} -> {self.now:g} GB/s)"
        if self.kind == "version_change":
            return f"{self.check} {self.component} {self.then} -> {self.now}"
        return f"{self.check} {self.then} -> {self.now}"

    @property
    def counts(self) -> bool:
        """Whether it says the host is bad: not an error (could not check), and a drop only once its re-run
        repeated it (a drop not re-run, or whose re-run measured nothing, drains nobody)."""
        if self.now_status == "error":
            return False
        return self.confirmed is True if self.kind == "busbw_drop" else True

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"host": self.host, "check": self.check, "kind": self.kind, "then": self.then,
                                "now": self.now, "now_status": self.now_status, "message": self.message}
        if self.component is not None:
            data["component"] = self.component
        for name in ("drop_pct", "noise_pct", "threshold_pct"):
            value = getattr(self, name)
            if value is not None:
                data[name] = round(value, 2)
        for name in ("samples", "bytes", "confirmed", "rerun_now"):
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        return data


def fault_is_elsewhere(record: Record) -> bool:
    """A multi-node record whose isolation (bisection) put the fault on other nodes.

    Every node of a multi-node run carries the whole job's busbw, so a slow link on one node drops the figure on
    all of them; the drop is the named nodes' regression, not this host's (which would otherwise be drained)."""
    at_fault = record.metrics.get("at_fault")
    return record.status != "fail" and isinstance(at_fault, list) and bool(at_fault) and record.host not in at_fault


def _busbw_drop(record: Record, then: BaselineEntry, drop_pct: float) -> Regression | None:
    """The worst figure of the record beyond its band, or ``None``."""
    candidates: list[tuple[int | None, Figure, float]] = []
    now_peak = peak_busbw(record)
    if now_peak is not None and then.peak.samples:
        candidates.append((None, then.peak, now_peak))
    for point in sweep(record):
        figure = then.sizes.get(point.bytes)
        if figure is not None and len(figure.samples) >= MIN_SIZE_SAMPLES:
            candidates.append((point.bytes, figure, point.busbw_gbps))
    worst: Regression | None = None
    for size, figure, now in candidates:
        median = figure.median
        if median <= 0:
            continue
        drop = (median - now) / median * 100.0
        threshold = figure.threshold_pct(drop_pct)
        if drop > threshold and (worst is None or drop > (worst.drop_pct or 0.0)):
            worst = Regression(record.host, record.check, "busbw_drop", round(median, 4), now, record.status,
                               drop_pct=drop, noise_pct=figure.noise_pct, threshold_pct=threshold,
                               samples=len(figure.samples), bytes=size)
    return worst


def find_regressions(run_records: Iterable[Record], baseline: Baseline | None,
                     busbw_drop_pct: float = DEFAULT_BUSBW_DROP_PCT) -> list[Regression]:
    """Every regression of a run against a baseline, ordered by host, check and kind.

    Checks and hosts absent from either side are not compared: a new host has nothing to hold yet, and a host
    left out of this run is not a regression of this run. A run's own samples in the baseline are left out.
    """
    if baseline is None:
        return []
    records = list(run_records)
    for run_id in {r.run_id for r in records if r.run_id}:
        baseline = baseline.excluding(run_id)
    found: list[Regression] = []
    for record in records:
        then = baseline.entry(record.host, record.check)
        if then is None:
            continue
        if then.status in HEALTHY and record.status in ("fail", "error"):
            found.append(Regression(record.host, record.check, "new_failure", then.status, record.status,
                                    record.status))
        if not fault_is_elsewhere(record):
            drop = _busbw_drop(record, then, busbw_drop_pct)
            if drop is not None:
                found.append(drop)
        now_components = components(record)
        for name, version in sorted(then.components.items()):
            current = now_components.get(name)
            if current is not None and current != version:
                found.append(Regression(record.host, record.check, "version_change", version, current,
                                        record.status, component=name))
    return sorted(found, key=lambda r: (r.host, r.check, r.kind, r.component or ""))


def needs_rerun(regression: Regression) -> bool:
    """A busbw drop of a check that still ran (an error is no figure), not yet re-run."""
    return regression.kind == "busbw_drop" and regression.now_status != "error" and regression.confirmed is None


def _figure_at(record: Record, size: int | None) -> float | None:
    if size is None:
        return peak_busbw(record)
    return next((p.busbw_gbps for p in sweep(record) if p.bytes == size), None)


def confirm_regressions(regressions: list[Regression], rerun_records: Iterable[Record], baseline: Baseline | None,
                        busbw_drop_pct: float = DEFAULT_BUSBW_DROP_PCT,
                        attempted: Iterable[str] | None = None) -> list[Regression]:
    """Every re-run busbw drop marked confirmed (its re-run dropped beyond the band too) or not; the others
    as they are. A drop whose check was not re-run at all stays as found (``confirmed`` None)."""
    rerun_records = list(rerun_records)
    reruns = {(r.host, r.check): r for r in rerun_records}
    attempted = set(attempted) if attempted is not None else None
    again = {(r.host, r.check) for r in find_regressions(reruns.values(), baseline, busbw_drop_pct)
             if r.kind == "busbw_drop"}
    out = []
    for regression in regressions:
        key = (regression.host, regression.check)
        if needs_rerun(regression) and key in reruns:
            regression = dataclasses.replace(regression, confirmed=key in again,
                                             rerun_now=_figure_at(reruns[key], regression.bytes))
        elif needs_rerun(regression) and attempted is not None and regression.host in attempted:
            # Re-run, but it left no record of that check (the host went unreachable, the re-run broke): a drop
            # nobody could measure again is not confirmed.
            regression = dataclasses.replace(regression, confirmed=False)
        out.append(regression)
    return out
