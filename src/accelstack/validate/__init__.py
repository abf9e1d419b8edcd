"""Validation: what a check is. Each check is declared once (``checks/``), the registry selects from the
declarations, and records are judged against thresholds kept as data (``judge``, ``thresholds``); bisection names
the node or link at fault (``isolate``). Where checks run is the engines' (:mod:`accelstack.engines`)."""

from __future__ import annotations

from .bandwidth import algbw_gbps, busbw_factor, busbw_gbps
from .judge import parse_document, to_record
from .registry import TIERS, Check, load_registry, select
from .thresholds import Threshold, Thresholds, judge, load_thresholds

__all__ = [
    "TIERS", "Check", "Threshold", "Thresholds", "algbw_gbps", "busbw_factor", "busbw_gbps",
    "judge", "load_registry", "load_thresholds", "parse_document", "select", "to_record",
]
