"""Diagnosis from logs: name the cause of a failed training job, show the lines that prove it, say what to do.

``diagnose_paths`` and ``diagnose_lines`` return a :class:`Diagnosis` whose findings are ordered root cause
first; the signatures live in ``data/signatures.yml``.
"""

from __future__ import annotations

from .catalog import CAUSES, Catalog, Signature, load_catalog, parse_catalog
from .engine import Diagnosis, EvidenceLine, Finding, Scanner, diagnose_lines, diagnose_paths
from .jobs import LogSource, expand_inputs
from .reader import LogUnreadable, clean_line, host_of, rank_of, timestamp_of
from .render import render_diagnosis

__all__ = [
    "CAUSES",
    "Catalog",
    "Diagnosis",
    "EvidenceLine",
    "Finding",
    "LogUnreadable",
    "Scanner",
    "Signature",
    "clean_line",
    "diagnose_lines",
    "diagnose_paths",
    "expand_inputs",
    "host_of",
    "LogSource",
    "timestamp_of",
    "load_catalog",
    "parse_catalog",
    "rank_of",
    "render_diagnosis",
]
