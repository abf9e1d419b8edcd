"""What Slurm's client commands print, read: ``sinfo`` node states, ``scontrol show node`` fields, a node's
``Gres``, and ``srun --label`` output (the one parser of both steps: the host checks and the multi-node collective).
Pure: no command is run here (:mod:`.client` runs them), every function is tested on captured output
(tests/data/slurm/)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

# sinfo's long states a node can take a task in; anything else, or a trailing `*` (not responding), is not.
USABLE_STATES = ("idle", "mixed", "allocated", "completing")


# The node line a node-collective task (local rank 0) prints before its result: {"accelstack_node": {...}}.
INFO_KEY = "accelstack_node"
LABEL = re.compile(r"^\s*(\d+):\s?(.*)$")


@dataclass(frozen=True)
class SlurmNode:
    name: str
    state: str

    @property
    def usable(self) -> bool:
        return not self.state.endswith(("*", "~", "#", "!", "%", "$", "@", "^", "-")) and \
            self.state.rstrip("+") in USABLE_STATES


def parse_sinfo_nodes(text: str) -> list[SlurmNode]:
    """``sinfo -h -N -o '%N %T'`` lines as nodes, first state seen per node (a node in two partitions is listed
    twice). Pure."""
    seen: dict[str, SlurmNode] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] not in seen:
            seen[parts[0]] = SlurmNode(parts[0], parts[1].lower())
    return list(seen.values())


def parse_scontrol_node(text: str) -> dict[str, str]:
    """``scontrol -o show node`` output (one line, ``Key=Value`` pairs; ``Reason`` runs to the line's end and
    may hold spaces and ``=``) as a dict. Pure."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    info: dict[str, str] = {}
    head, sep, reason = line.partition(" Reason=")
    for item in head.split():
        key, eq, value = item.partition("=")
        if eq:
            info[key] = value
    if sep:
        info["Reason"] = reason.strip()
    return info


class LabelledOutput:
    """``srun --label`` output fed a line at a time: each JSON object as it is whole, with its task's label, and
    every other line (for evidence). The one parser of both steps' output (host checks, multi-node).

    srun forwards a task's output in chunks and labels each chunk as a line of its own, so a long line arrives
    cut in pieces (``1: {..."stor`` then ``1: age"...}``): a task's chunks are joined until they parse. Pure."""

    def __init__(self, wanted: Callable[[dict[str, Any]], bool] | None = None) -> None:
        self.wanted = wanted  # which objects the caller reads; the others are kept with the other lines
        self.other: list[str] = []
        self._pending: dict[str, str] = {}

    def feed(self, line: str) -> list[tuple[str, dict[str, Any]]]:
        """The ``(task, object)`` this line completes (none or one)."""
        match = LABEL.match(line)
        task, body = (match.group(1), match.group(2)) if match else ("", line)
        if task not in self._pending and not body.startswith("{"):
            if line.strip():
                self.other.append(line)
            return []
        joined = self._pending.pop(task, "") + body
        # A chunk cut inside an object rarely ends in "}": wait for the rest instead of failing a parse on each.
        if not joined.rstrip().endswith("}"):
            self._pending[task] = joined
            return []
        try:
            item = json.loads(joined)
        except ValueError:
            self._pending[task] = joined
            return []
        if isinstance(item, dict) and (self.wanted is None or self.wanted(item)):
            return [(task, item)]
        self.other.append(f"{task}: {joined}" if task else joined)
        return []

    def finish(self) -> list[str]:
        """Every line that was not an object, with the pieces of one that never became whole."""
        return self.other + [f"{task}: {rest}" if task else rest for task, rest in self._pending.items()]


def is_record(item: dict[str, Any]) -> bool:
    return {"host", "check", "status"} <= set(item)


def parse_step_output(text: str) -> tuple[list[dict], list[str]]:
    """The host step's whole labelled output: the JSON records, and every other line (for evidence). Pure."""
    parser = LabelledOutput(wanted=is_record)
    found = [item for line in text.splitlines() for _task, item in parser.feed(line)]
    return found, parser.finish()


def gres_request(gres: str) -> str | None:
    """What a step asks for to see all of a node's devices: the device-like items of its ``Gres`` as Slurm reports
    them, socket bindings left out (``gpu:h100:8(S:0-1),shard:4`` -> ``gpu:h100:8``); ``None`` for a node with
    none (``(null)``). Pure."""
    items = [item.split("(")[0] for item in (gres or "").split(",")]
    wanted = [item for item in items if item.split(":")[0] in ("gpu", "npu") and parse_gres_count(item)]
    return ",".join(wanted) or None


def common_gres(gres: Sequence[str]) -> str | None:
    """One ``--gres`` for a step over nodes with these ``Gres``: theirs when they agree; else the fewest devices of
    the first kind, untyped (``gpu:4``), which every node can give; ``None`` when a node has none. Pure."""
    requests = [gres_request(g) for g in gres]
    if not requests or any(r is None for r in requests):
        return None
    if len(set(requests)) == 1:
        return requests[0]
    kind = str(requests[0]).split(":")[0]
    return f"{kind}:{min(parse_gres_count(str(r)) for r in requests)}"


def parse_gres_count(gres: str) -> int:
    """The device count of a node's ``Gres`` (``gpu:8``, ``gpu:h100:8(S:0-1)``, ``npu:8,shard:4``; ``(null)``:
    none), the first device-like one. Pure."""
    for item in (gres or "").split(","):
        parts = item.split("(")[0].split(":")
        if parts[0] in ("gpu", "npu") and len(parts) >= 2 and parts[-1].isdigit():
            return int(parts[-1])
    return 0


def last_line(text: str, empty: str = "no output") -> str:
    """A client command's stderr as one line for a bad-input message: its last line that says something (Slurm
    prints the cause last). Pure."""
    lines = [" ".join(line.split()) for line in (text or "").splitlines() if line.strip()]
    return lines[-1][-300:] if lines else empty


def labelled_documents(text: str) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """``srun --label`` output as ``(task, JSON object)`` pairs, and every other line (the host step's parser,
    :class:`LabelledOutput`). Pure."""
    parser = LabelledOutput()
    found = [pair for line in text.splitlines() for pair in parser.feed(line)]
    return found, parser.finish()


