"""Split a batch of labelled logs into the corpus's development and evaluation parts, before anything is written
from them.

    python tests/data/diagnose_corpus/split.py INCOMING BATCH      add a batch: INCOMING/labels.jsonl + its logs
    python tests/data/diagnose_corpus/split.py --check             recompute every batch's split, compare

How the split is made (issue 22, "measured honestly"):
- The unit is a *group*: the logs of one thread (or one provoked case, one capture) go to the same part, so no
  thread is half in dev and half in eval. A label's ``group`` defaults to its ``source``.
- A group with ``seen: true`` (a signature was already written from it before the corpus existed) goes to dev:
  it cannot measure anything.
- Every other group is placed in a list sorted by stratum, cause family (``families.yml``) then kind of source
  (thread, capture, provoked), shuffled inside its stratum by a generator seeded with ``SEED`` and the batch
  name; then systematic sampling with the fraction ``DEV_FRACTION`` (a seeded random start, every position where
  the running total crosses an integer goes to dev). Each stratum gets its share to within one group, and the
  whole batch to within one group of 60/40.
- The result depends only on the batch's labels, so ``--check`` recomputes it from the committed labels files
  and fails if any log is in the other part than the script puts it.

Nothing may be written from ``eval/`` (no table entry, no pattern, no test expectation): it is read only by
``bench/diagnose_accuracy.py``. ``dev/`` is for whoever writes the tables.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
CAUSES_YML = REPO / "src" / "accelstack" / "data" / "causes.yml"
PARTS = ("dev", "eval")
SEED = 22  # the number; fixed once, never changed for a batch already split
DEV_FRACTION = 0.6
ACTORS = ("node", "job", "config", "service")
VENDORS = ("nvidia", "ascend", "cpu", "any")
HEALTHY = "healthy"
REQUIRED = ("file", "source", "cause", "actor", "vendor", "rationale")


# ---- the vocabulary ---------------------------------------------------------------------------------------------

def load_causes(path: Path = CAUSES_YML) -> dict[str, str]:
    """cause id -> its actor, from causes.yml. Read as YAML; where the file does not parse as YAML (a colon
    inside an unquoted remedy), from its layout: two-space cause ids with a four-space ``actor:`` under each."""
    text = path.read_text()
    try:
        causes = yaml.safe_load(text)["causes"]
        return {str(cause): str(entry["actor"]) for cause, entry in causes.items()}
    except yaml.YAMLError:
        found: dict[str, str] = {}
        current = None
        for line in text.splitlines():
            head = re.match(r"^  ([a-z0-9-]+):\s*$", line)
            if head:
                current = head.group(1)
                continue
            actor = re.match(r"^    actor:\s*(\w+)", line)
            if actor and current:
                found[current] = actor.group(1)
        return found


def load_families(path: Path = HERE / "families.yml") -> dict[str, str]:
    """cause id -> family."""
    families = yaml.safe_load(path.read_text())["families"]
    return {cause: family for family, causes in families.items() for cause in causes}


def source_kind(label: dict[str, Any]) -> str:
    source = str(label["source"])
    if source.startswith("provoked"):
        return "provoked"
    if source.startswith("capture"):
        return "capture"
    return "thread"


# ---- labels files -----------------------------------------------------------------------------------------------

def read_labels(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    labels = []
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                labels.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise SystemExit(f"{path}:{lineno}: not JSON: {exc}") from None
    return labels


def write_labels(path: Path, labels: Iterable[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(label, ensure_ascii=False) + "\n" for label in labels))


def problems(labels: list[dict[str, Any]], causes: dict[str, str], families: dict[str, str],
             folder: Path) -> list[str]:
    """What is wrong with a batch's labels, one line each (empty: nothing)."""
    found = []
    for n, label in enumerate(labels, 1):
        where = f"label {n} ({label.get('file', '?')})"
        missing = [key for key in REQUIRED if not str(label.get(key, "")).strip()]
        if missing:
            found.append(f"{where}: missing {', '.join(missing)}")
            continue
        if label["cause"] != HEALTHY and label["cause"] not in causes:
            found.append(f"{where}: cause {label['cause']!r} is not in causes.yml")
        if label["cause"] not in families:
            found.append(f"{where}: cause {label['cause']!r} has no family in families.yml")
        if label["cause"] == HEALTHY and label["actor"] != "none":
            found.append(f"{where}: a healthy log's actor is 'none'")
        if label["cause"] != HEALTHY and label["actor"] not in ACTORS:
            found.append(f"{where}: actor {label['actor']!r} is not one of {ACTORS}")
        if label["vendor"] not in VENDORS:
            found.append(f"{where}: vendor {label['vendor']!r} is not one of {VENDORS}")
        if not (folder / label["file"]).is_file():
            found.append(f"{where}: no file {folder / label['file']}")
    names = [label.get("file") for label in labels]
    found += [f"{name}: labelled twice" for name in sorted({n for n in names if names.count(n) > 1})]
    return found


# ---- the split --------------------------------------------------------------------------------------------------

def group_of(label: dict[str, Any]) -> str:
    return str(label.get("group") or label["source"])


def assign(labels: list[dict[str, Any]], batch: str, families: dict[str, str]) -> dict[str, str]:
    """file -> "dev" or "eval" for one batch's labels. Deterministic: the same labels give the same split."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for label in labels:
        groups.setdefault(group_of(label), []).append(label)
    rng = random.Random(f"{SEED}:{batch}")
    part_of_group: dict[str, str] = {}
    open_groups = []
    for name, members in sorted(groups.items()):
        if any(member.get("seen") for member in members):
            part_of_group[name] = "dev"
            continue
        first = min(members, key=lambda member: str(member["file"]))
        stratum = (families[first["cause"]], source_kind(first))
        # A stable per-group key (not Python's salted hash), shuffled by the seeded generator below.
        open_groups.append((stratum, hashlib.sha256(name.encode()).hexdigest(), name))
    open_groups.sort()
    shuffled: list[str] = []
    for stratum in sorted({g[0] for g in open_groups}):
        names = [g[2] for g in open_groups if g[0] == stratum]
        rng.shuffle(names)
        shuffled += names
    start = rng.random()
    for index, name in enumerate(shuffled):
        crossed = int(start + (index + 1) * DEV_FRACTION) - int(start + index * DEV_FRACTION)
        part_of_group[name] = "dev" if crossed else "eval"
    return {label["file"]: part_of_group[group_of(label)] for label in labels}


def add_batch(incoming: Path, batch: str) -> dict[str, int]:
    causes, families = load_causes(), load_families()
    labels = read_labels(incoming / "labels.jsonl")
    if not labels:
        raise SystemExit(f"{incoming / 'labels.jsonl'}: no labels")
    trouble = problems(labels, causes, families, incoming)
    existing = {label["file"] for part in PARTS for label in read_labels(HERE / part / "labels.jsonl")}
    batches = {label.get("batch") for part in PARTS for label in read_labels(HERE / part / "labels.jsonl")}
    trouble += [f"{label['file']}: already in the corpus" for label in labels if label["file"] in existing]
    if batch in batches:
        trouble.append(f"batch {batch!r} was split already: a batch is split once")
    if trouble:
        raise SystemExit("\n".join(trouble))
    parts = assign(labels, batch, families)
    counts = dict.fromkeys(PARTS, 0)
    for part in PARTS:
        (HERE / part).mkdir(exist_ok=True)
        chosen = [dict(label, batch=batch) for label in labels if parts[label["file"]] == part]
        for label in chosen:
            shutil.copyfile(incoming / label["file"], HERE / part / label["file"])
        write_labels(HERE / part / "labels.jsonl", read_labels(HERE / part / "labels.jsonl") + chosen)
        counts[part] = len(chosen)
    return counts


def check() -> list[str]:
    """Every committed log is in the part the script puts it in, given its batch."""
    families = load_families()
    by_batch: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for part in PARTS:
        for label in read_labels(HERE / part / "labels.jsonl"):
            by_batch.setdefault(str(label.get("batch")), []).append((part, label))
    wrong = []
    for batch, entries in sorted(by_batch.items()):
        expected = assign([label for _, label in entries], batch, families)
        wrong += [f"{label['file']} (batch {batch}) is in {part}/, the split puts it in {expected[label['file']]}/"
                  for part, label in entries if expected[label["file"]] != part]
    return wrong


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("incoming", nargs="?", type=Path, help="a folder with labels.jsonl and the logs it names")
    parser.add_argument("batch", nargs="?", help="the batch's name (part of the seed)")
    parser.add_argument("--check", action="store_true", help="recompute every batch's split and compare")
    args = parser.parse_args(argv)
    if args.check:
        wrong = check()
        print("\n".join(wrong) if wrong else "every log is in the part the split puts it in")
        return 1 if wrong else 0
    if not (args.incoming and args.batch):
        parser.error("give INCOMING and BATCH, or --check")
    counts = add_batch(args.incoming, args.batch)
    print(f"batch {args.batch}: " + ", ".join(f"{counts[p]} to {p}/" for p in PARTS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
