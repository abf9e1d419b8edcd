"""Validation: host validators (self-contained scripts under ``accelstack/hostside/validators/``, one JSON
document each) and cluster validators (clock, ports, multi-node allreduce with fault isolation by bisection), judged
against thresholds kept as data. The last layer of the flow in DESIGN.md before results."""

from __future__ import annotations

from .bandwidth import algbw_gbps, busbw_factor, busbw_gbps
from .cluster import isolate, ring_rounds
from .registry import TIERS, Check, Validator, load_registry, select
from .results import parse_document, to_record
from .run import validate_hosts, validate_inventory
from .thresholds import Threshold, Thresholds, judge, load_thresholds

__all__ = [
    "TIERS", "Check", "Threshold", "Thresholds", "Validator", "algbw_gbps", "busbw_factor", "busbw_gbps", "isolate",
    "judge", "load_registry", "load_thresholds", "parse_document", "ring_rounds", "select",
    "to_record", "validate_hosts", "validate_inventory",
]
