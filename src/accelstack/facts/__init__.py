"""Facts in one round trip: a self-contained probe (POSIX sh) runs on the host and prints framed raw text; pure
parsers turn it into typed :class:`Facts`.

    cmd = probe_command(ProbeOptions(python="/opt/venv/bin/python"))
    facts = parse_probe_output(conn.run(cmd, hide=True).stdout)
"""

from __future__ import annotations

from accelstack.facts.assemble import parse_probe_document, parse_probe_output, parse_sections
from accelstack.facts.model import (
    COMPONENT_KEYS,
    Address,
    Facts,
    Interface,
    PciDevice,
    TorchFacts,
)
from accelstack.facts.probe import ProbeOptions, probe_command

__all__ = [
    "COMPONENT_KEYS",
    "Address",
    "Facts",
    "Interface",
    "PciDevice",
    "ProbeOptions",
    "TorchFacts",
    "parse_probe_document",
    "parse_probe_output",
    "parse_sections",
    "probe_command",
]
