"""``inv diagnose``: name the cause of a failed training job from its logs.

invoke 2.2 has no variadic positional arguments (pyinvoke/invoke#378, #760), so logs are given with a
repeatable flag: ``inv diagnose -l rank0.log -l rank1.log.gz``. :func:`spread_positional_logs` turns the
positional form (``diagnose a.log b.log.gz``) into that, for a Program that wants to offer it.
"""

from __future__ import annotations

import json as jsonlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from invoke import task
from rich.console import Console

from ..errors import ConfigError
from ..output import records_table
from ..records import Record
from .common import boundary

if TYPE_CHECKING:
    from ..diagnose import Diagnosis

HELP = {
    "log": "a log file to read (repeatable; plain or gzip, detected by content; '-' reads standard input)",
    "host": "run the validators that confirm each finding on this host and fold their results in",
    "inventory": "inventory the --host is in (default: local)",
    "json": 'print {"findings": [...]} as JSON on stdout, root cause first',
}

# A catalog entry names the validator that confirms it; these are the checks that validator produces.
CONFIRM_CHECKS: dict[str, tuple[str, ...]] = {
    "collective": ("collective_init", "allreduce"),
    "devices": ("devices",),
    "env": ("env",),
    "hccn": ("hccn",),
    "libraries": ("libraries",),
    "memory": ("memory",),
    "storage": ("storage",),
    "versions": ("versions",),
}


def confirm_on_host(diagnosis: Diagnosis, inventory: str | None, host: str) -> list[Record]:
    """Run the validators that would confirm the findings, on one host; their records, as validate gives them."""
    from ..validate import validate_inventory  # the validation layer is only needed with --host

    checks = {check for name in diagnosis.confirm_validators() for check in CONFIRM_CHECKS.get(name, (name,))}
    if not checks:
        return []
    return validate_inventory(inventory, limit=host, only=checks, tier="full")


def diagnosis_document(diagnosis: Diagnosis, host: str | None,
                       confirmed: list[Record] | None = None) -> dict[str, Any]:
    """The JSON document the task prints: findings, plus what was confirmed on which host."""
    document = diagnosis.to_dict()
    if host:
        document["confirm"] = {"host": host, "validators": diagnosis.confirm_validators(),
                               "records": [r.to_dict() for r in confirmed or []]}
    return document


@task(iterable=["log"], help=HELP)
@boundary
def diagnose(c: Any, log: list[str] | None = None, host: str | None = None, inventory: str | None = None,
             json: bool = False) -> int:
    """Name the likely root cause of a failed job from its logs; exit 1 when something was found.

    Reads every log as one job (ranks interleaved or one file per rank), shows the lines that prove each
    finding, what to do, and which validator confirms it on a host. Exit 0: no known signature; 1: findings;
    3: a log could not be read.
    """
    from ..diagnose import diagnose_paths, render_diagnosis  # loaded when this task runs

    paths = list(log or [])
    if not paths:
        raise ConfigError("no log given", hint="inv diagnose --log FILE [--log FILE ...]; '-' reads stdin")
    diagnosis = diagnose_paths(paths)
    confirmed = confirm_on_host(diagnosis, inventory, host) if host and diagnosis.findings else []
    if json:
        print(jsonlib.dumps(diagnosis_document(diagnosis, host, confirmed), indent=2))
    else:
        console = Console()
        console.print(render_diagnosis(diagnosis))
        if confirmed:
            console.print(records_table(confirmed, title=f"confirmed on {host}"))
    return diagnosis.exit_code


def spread_positional_logs(argv: Sequence[str], task_name: str = "diagnose") -> list[str]:
    """Rewrite ``... diagnose a.log b.log --json`` as ``... diagnose --log a.log --log b.log --json``.

    Bare words after the task name become logs until the next flag that takes a value is seen; the value of
    ``--host``/``-h`` is kept as it is. A word that is another task's name cannot be told from a file name,
    so this is for a Program whose command line holds only ``diagnose``.
    """
    args = list(argv)
    if task_name not in args:
        return args
    start = args.index(task_name) + 1
    out = args[:start]
    takes_value = {"--host", "--log", "-l", "--inventory", "-i"}
    index = start
    while index < len(args):
        word = args[index]
        if word in takes_value and index + 1 < len(args):
            out.extend((word, args[index + 1]))
            index += 2
            continue
        if word.startswith("-") and word != "-":
            out.append(word)
        else:
            out.extend(("--log", word))
        index += 1
    return out

