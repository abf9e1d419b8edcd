"""Diagnosis accuracy: `accelstack diagnose` on the labelled corpus of real logs, beside the goals of issue 22.

    python bench/diagnose_accuracy.py [--part eval|dev|both|probe] [--tiny] [--json]

For each log of ``tests/data/diagnose_corpus/<part>/`` (labels in that part's ``labels.jsonl``) it calls the
public API, ``accelstack.diagnose.diagnose_paths([path])``, and reads the first finding (``root_cause``, else
``findings[0]``): its ``cause``, and its ``actor`` where the engine gives one (else the actor ``causes.yml`` gives
that cause). It prints, per part:
- first-cause accuracy and actor accuracy over the failed logs,
- silent failures (a failed log given no finding) and findings on healthy logs,
- for the development part only, a breakdown by cause family and the list of misses (file, expected, got).

The evaluation part prints its four figures and nothing per log or per family: a list of its misses would be a
list of what to fit, and nothing may be written from it. ``--json`` keeps the same rule.

``--part probe`` reads the silence probe instead (tests/data/diagnose_probe/: public pastes of failed and healthy
runs, without causes): failed pastes given no finding and healthy pastes given a finding, with their files.

The evaluation part is the figure that counts: nothing was written from it (tests/data/diagnose_corpus/README.md).
The development part is printed separately, so a gap between the two shows overfitting. ``--tiny`` runs a few
development logs only (the CI smoke run); no figure is compared with a goal there.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CORPUS = REPO / "tests" / "data" / "diagnose_corpus"
PROBE = REPO / "tests" / "data" / "diagnose_probe"
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(CORPUS))

from split import HEALTHY, load_causes, load_families, read_labels  # noqa: E402

from accelstack.diagnose import diagnose_paths  # noqa: E402
from accelstack.tasks.stdout import guard_stdout  # noqa: E402

GOALS = {"cause": 0.90, "actor": 0.95, "silent": 0, "healthy_findings": 0}
TINY = 6


@dataclass
class Outcome:
    file: str
    family: str
    expected_cause: str
    expected_actor: str
    got_cause: str | None
    got_actor: str | None
    error: str | None = None

    @property
    def healthy(self) -> bool:
        return self.expected_cause == HEALTHY

    @property
    def cause_right(self) -> bool:
        return self.got_cause is None if self.healthy else self.got_cause == self.expected_cause

    @property
    def actor_right(self) -> bool:
        return self.got_actor is None if self.healthy else self.got_actor == self.expected_actor


def first_finding(diagnosis: Any) -> Any:
    """The engine's first finding: ``root_cause`` where the Diagnosis has it, else ``findings[0]``."""
    if hasattr(diagnosis, "root_cause"):
        return diagnosis.root_cause
    findings = getattr(diagnosis, "findings", None) or []
    return findings[0] if findings else None


def judge(path: Path, label: dict[str, Any], actors: dict[str, str], families: dict[str, str]) -> Outcome:
    outcome = Outcome(file=label["file"], family=families.get(label["cause"], "?"), expected_cause=label["cause"],
                      expected_actor=label["actor"], got_cause=None, got_actor=None)
    try:
        finding = first_finding(diagnose_paths([str(path)]))
    except Exception as exc:  # an engine that raises on a real log is a miss, not the end of the benchmark
        outcome.error = f"{type(exc).__name__}: {exc}"
        return outcome
    if finding is not None:
        outcome.got_cause = str(finding.cause)
        # The new engine carries the actor on the finding; today's derives it from causes.yml.
        actor = getattr(finding, "actor", None)
        outcome.got_actor = str(actor) if actor else actors.get(outcome.got_cause)
    return outcome


def run_part(part: str, limit: int | None = None) -> list[Outcome]:
    actors, families = load_causes(), load_families()
    folder = CORPUS / part
    labels = read_labels(folder / "labels.jsonl")
    if limit is not None:
        # A few of each kind: failed logs first, one healthy log, in file order (stable for CI).
        failed = sorted((lab for lab in labels if lab["cause"] != HEALTHY), key=lambda lab: lab["file"])
        healthy = sorted((lab for lab in labels if lab["cause"] == HEALTHY), key=lambda lab: lab["file"])
        labels = failed[:limit - 1] + healthy[:1]
    return [judge(folder / label["file"], label, actors, families) for label in labels]


def summarise(outcomes: list[Outcome]) -> dict[str, Any]:
    failed = [o for o in outcomes if not o.healthy]
    healthy = [o for o in outcomes if o.healthy]
    families: dict[str, dict[str, int]] = defaultdict(lambda: {"logs": 0, "cause": 0, "actor": 0, "silent": 0})
    for o in outcomes:
        row = families[o.family]
        row["logs"] += 1
        row["cause"] += o.cause_right
        row["actor"] += o.actor_right
        row["silent"] += (not o.healthy) and o.got_cause is None
    return {
        "logs": len(outcomes),
        "failed": len(failed),
        "healthy": len(healthy),
        "cause_right": sum(o.cause_right for o in failed),
        "actor_right": sum(o.actor_right for o in failed),
        "silent": sum(o.got_cause is None for o in failed),
        "healthy_findings": sum(o.got_cause is not None for o in healthy),
        "errors": sum(o.error is not None for o in outcomes),
        "families": dict(sorted(families.items())),
        "misses": [asdict(o) for o in outcomes if not (o.cause_right and o.actor_right)],
    }


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f} %" if whole else "    -  "


def sealed(summary: dict[str, Any]) -> dict[str, Any]:
    """The evaluation part's summary without what is per log or per family (see the module's doc)."""
    return {key: value for key, value in summary.items() if key not in ("families", "misses")}


def render(part: str, summary: dict[str, Any], seconds: float, *, goals: bool) -> str:
    failed, healthy = summary["failed"], summary["healthy"]

    def goal(text: str) -> str:
        return f"   goal {text}" if goals else ""

    lines = [
        f"== {part}: {summary['logs']} logs ({failed} failed, {healthy} healthy), diagnosed in {seconds:.1f} s",
        f"  first cause right   {summary['cause_right']:4d} / {failed:<4d} {_pct(summary['cause_right'], failed)}"
        + goal(f">= {GOALS['cause']:.0%}"),
        f"  actor right         {summary['actor_right']:4d} / {failed:<4d} {_pct(summary['actor_right'], failed)}"
        + goal(f">= {GOALS['actor']:.0%}"),
        f"  silent failures     {summary['silent']:4d} / {failed:<4d} {_pct(summary['silent'], failed)}"
        + goal(f"{GOALS['silent']}"),
        f"  healthy w/ finding  {summary['healthy_findings']:4d} / {healthy:<4d} "
        f"{_pct(summary['healthy_findings'], healthy)}" + goal(f"{GOALS['healthy_findings']}"),
    ]
    if summary["errors"]:
        lines.append(f"  engine raised on    {summary['errors']:4d} logs (counted as no finding)")
    if "families" not in summary:
        return "\n".join(lines)
    lines.append(f"  {'family':<14} {'logs':>5} {'cause':>7} {'actor':>7} {'silent':>7}")
    for family, row in summary["families"].items():
        lines.append(f"  {family:<14} {row['logs']:5d} {row['cause']:7d} {row['actor']:7d} {row['silent']:7d}")
    if summary["misses"]:
        lines.append(f"  misses ({len(summary['misses'])}): file: expected cause/actor -> got cause/actor")
        for miss in summary["misses"]:
            got = f"{miss['got_cause']}/{miss['got_actor']}" if miss["got_cause"] else "no finding"
            if miss["error"]:
                got = f"engine raised {miss['error'][:120]}"
            lines.append(f"    {miss['file']}: {miss['expected_cause']}/{miss['expected_actor']} -> {got}")
    return "\n".join(lines)


def run_probe() -> dict[str, Any]:
    """The silence probe: which failed pastes get no finding, which healthy ones get one."""
    rows = [json.loads(line) for line in (PROBE / "index.jsonl").read_text().splitlines() if line.strip()]
    got = {row["file"]: first_finding(diagnose_paths([str(PROBE / row["file"])])) is not None for row in rows}
    silent = [row["file"] for row in rows if row["failed"] and not got[row["file"]]]
    flagged = [row["file"] for row in rows if not row["failed"] and got[row["file"]]]
    return {"pastes": len(rows), "failed": sum(1 for row in rows if row["failed"]),
            "healthy": sum(1 for row in rows if not row["failed"]), "silent": len(silent),
            "healthy_findings": len(flagged), "silent_files": silent, "flagged_files": flagged}


def render_probe(summary: dict[str, Any], seconds: float) -> str:
    failed, healthy = summary["failed"], summary["healthy"]
    lines = [
        f"== probe: {summary['pastes']} pastes ({failed} failed, {healthy} healthy), diagnosed in {seconds:.1f} s",
        f"  failed, no finding  {summary['silent']:4d} / {failed:<4d} {_pct(summary['silent'], failed)}",
        f"  healthy w/ finding  {summary['healthy_findings']:4d} / {healthy:<4d} "
        f"{_pct(summary['healthy_findings'], healthy)}",
    ]
    lines.extend(f"    silent: {name}" for name in summary["silent_files"])
    lines.extend(f"    flagged: {name}" for name in summary["flagged_files"])
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=("eval", "dev", "both", "probe"), default="both",
                        help="which part of the corpus (default: eval, then dev, each on its own), or the "
                             "silence probe")
    parser.add_argument("--tiny", action="store_true", help=f"{TINY} development logs only (CI smoke run)")
    parser.add_argument("--json", action="store_true", help="one JSON object per part instead of the table")
    args = parser.parse_args(argv)
    guard_stdout()  # "| head" ends the table, not with a traceback
    if args.part == "probe":  # (136 short pastes: the probe is its own tiny run)
        started = time.perf_counter()
        probe = run_probe()
        seconds = time.perf_counter() - started
        print(json.dumps({"part": "probe", "seconds": round(seconds, 2), **probe}) if args.json
              else render_probe(probe, seconds))
        return 0
    parts = ["dev"] if args.tiny else (["eval", "dev"] if args.part == "both" else [args.part])
    for part in parts:
        started = time.perf_counter()
        outcomes = run_part(part, TINY if args.tiny else None)
        seconds = time.perf_counter() - started
        summary = summarise(outcomes)
        if part == "eval":
            summary = sealed(summary)
        if args.json:
            print(json.dumps({"part": part, "tiny": args.tiny, "seconds": round(seconds, 2), **summary}))
        else:
            print(render(part, summary, seconds, goals=not args.tiny))
    return 0


if __name__ == "__main__":
    sys.exit(main())
