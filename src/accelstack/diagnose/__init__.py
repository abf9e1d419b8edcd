"""Diagnosis from logs: name the cause of a failed training job, who acts on it, the lines that prove it, and what
to do.

``diagnose_paths`` and ``diagnose_lines`` return a :class:`Diagnosis` whose findings are ordered root cause first
(``Diagnosis.first``); each finding carries a ``cause`` of ``data/causes.yml`` and an ``actor`` (node, job, config,
service). Three layers decide: the signatures (``data/signatures.yml``), the error taxonomies
(``data/diagnose/*.yml``) and the structure of a failure (a traceback, torchrun's summary, a signal, the scheduler's
job-end lines), so a job that failed always gets a finding.
"""

from __future__ import annotations

from .catalog import CAUSES, Catalog, Signature, load_catalog, parse_catalog
from .causes import ACTORS, Cause, load_causes
from .diagnosis import Diagnosis, Scanner, diagnose_lines, diagnose_paths
from .findings import EvidenceLine, Finding
from .jobs import LogSource, expand_inputs
from .reader import LogUnreadable, clean_line, host_of, rank_of, timestamp_of
from .render import render_diagnosis
from .tables import TableRow, Tables, load_tables

__all__ = [
    "ACTORS",
    "CAUSES",
    "Catalog",
    "Cause",
    "Diagnosis",
    "EvidenceLine",
    "Finding",
    "LogSource",
    "LogUnreadable",
    "Scanner",
    "Signature",
    "TableRow",
    "Tables",
    "clean_line",
    "diagnose_lines",
    "diagnose_paths",
    "expand_inputs",
    "host_of",
    "load_catalog",
    "load_causes",
    "load_tables",
    "parse_catalog",
    "rank_of",
    "render_diagnosis",
    "timestamp_of",
]
