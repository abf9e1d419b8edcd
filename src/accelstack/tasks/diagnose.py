"""``inv diagnose``: name the cause of a failed training job from its logs.

invoke 2.2 has no variadic positional arguments (pyinvoke/invoke#378, #760), so logs are given with a
repeatable flag: ``inv diagnose -l rank0.log -l rank1.log.gz``. :func:`spread_positional_logs` turns the
positional form (``diagnose a.log b.log.gz``) into that, for a Program that wants to offer it.
"""

from __future__ import annotations

import json as jsonlib
from collections.abc import Sequence
from typing import Any

from invoke import task
from rich.console import Console

from ..diagnose import Diagnosis, diagnose_paths, render_diagnosis
from ..errors import ConfigError
from .common import boundary

HELP = {
    "log": "a log file to read (repeatable; plain or gzip, detected by content; '-' reads standard input)",
    "host": "a host to confirm the findings on; for now the validators to run are listed in the output",
    "json": 'print {"findings": [...]} as JSON on stdout, root cause first',
}


def diagnosis_document(diagnosis: Diagnosis, host: str | None) -> dict[str, Any]:
    """The JSON document the task prints: findings, plus what ``--host`` would confirm on which host."""
    document = diagnosis.to_dict()
    if host:
        document["confirm"] = {"host": host, "validators": diagnosis.confirm_validators()}
    return document


@task(iterable=["log"], help=HELP)
@boundary
def diagnose(c: Any, log: list[str] | None = None, host: str | None = None, json: bool = False) -> int:
    """Name the likely root cause of a failed job from its logs; exit 1 when something was found.

    Reads every log as one job (ranks interleaved or one file per rank), shows the lines that prove each
    finding, what to do, and which validator confirms it on a host. Exit 0: no known signature; 1: findings;
    3: a log could not be read.
    """
    paths = list(log or [])
    if not paths:
        raise ConfigError("no log given", hint="inv diagnose --log FILE [--log FILE ...]; '-' reads stdin")
    diagnosis = diagnose_paths(paths)
    if json:
        print(jsonlib.dumps(diagnosis_document(diagnosis, host), indent=2))
    else:
        console = Console()
        console.print(render_diagnosis(diagnosis))
        if host and diagnosis.findings:
            names = ", ".join(diagnosis.confirm_validators())
            console.print(f"to confirm on {host}: validators {names}")
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
    takes_value = {"--host", "--log", "-l"}
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

