"""Diagnosis from logs: name the cause of a failed training job, show the lines that prove it, say what to do.

``diagnose_paths`` and ``diagnose_lines`` return a :class:`Diagnosis` whose findings are ordered root cause
first; the signatures live in ``data/signatures.yml``.
"""

from __future__ import annotations

from .catalog import CAUSES, Catalog, Signature, load_catalog, parse_catalog
from .engine import Diagnosis, EvidenceLine, Finding, Scanner, diagnose_lines, diagnose_paths
from .reader import LogUnreadable, clean_line, iter_log_lines, rank_of
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
    "iter_log_lines",
    "load_catalog",
    "parse_catalog",
    "rank_of",
    "render_diagnosis",
]
