"""JUnit XML in the dialect Jenkins, GitLab and most CI systems read (checked in the tests against
``tests/data/junit/junit.xsd``, a schema written for accelstack from that documented format).

One ``testsuite`` per host and one ``testcase`` per host and check (``classname`` = host, ``name`` =
check). The schema allows no ``properties`` inside a testcase, so metrics go to the host's suite as
``<check>.<metric>`` properties, and to the testcase's ``system-out`` with the summary and remedy. A
regression turns a passing testcase into a failure, so CI goes red on it.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections import defaultdict

from ..results.metrics import one_rank, scalar_metrics
from ..results.records import Record
from .model import ReportData, cells

# XML 1.0 cannot carry most control characters, even escaped; tool output sometimes has them.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _clean(text: object) -> str:
    return _NOT_XML.sub("\ufffd", str(text))


def _seconds(value: float) -> str:
    return f"{max(value, 0.0):.3f}"


def number_text(value: float) -> str:
    """A number written in full: ``16777216``, not ``1.67772e+07``; ``0.0257`` as it was measured."""
    if float(value).is_integer() and abs(value) < 1e18:
        return str(int(value))
    return repr(float(value))


def _details(record: Record) -> str:
    lines = [_clean(record.summary)]
    if record.remedy:
        lines.append(f"remedy: {_clean(record.remedy)}")
    if record.evidence:
        lines.append("evidence: " + _clean(json.dumps(record.evidence, sort_keys=True, default=str)))
    return "\n".join(lines)


def render_junit(data: ReportData) -> str:
    by_host: dict[str, list[Record]] = defaultdict(list)
    for record in cells(data.records).values():
        by_host[record.host].append(record)
    totals = {"tests": 0, "failures": 0, "errors": 0, "time": 0.0}
    root = ET.Element("testsuites", name=_clean(f"accelstack {data.run_id}"))
    timestamp = str(data.meta.get("started") or data.generated)
    for host in data.hosts:
        records = sorted(by_host[host], key=lambda r: r.check)
        suite = ET.SubElement(root, "testsuite", name=_clean(host), hostname=_clean(host),
                              timestamp=timestamp, id=_clean(data.run_id), package="accelstack")
        properties = ET.SubElement(suite, "properties")
        counts = {"failures": 0, "errors": 0, "skipped": 0}
        for record in records:
            for metric, value in sorted(scalar_metrics(record).items()):
                ET.SubElement(properties, "property", name=_clean(f"{record.check}.{metric}"),
                              value=number_text(value))
            case = ET.SubElement(suite, "testcase", classname=_clean(host), name=_clean(record.check),
                                 time=_seconds(record.duration_s))
            regressions = data.regressions_for(host, record.check)
            if record.status == "fail":
                counts["failures"] += 1
                failure = ET.SubElement(case, "failure", type="fail", message=_clean(record.summary))
                failure.text = _details(record)
            elif record.status == "error":
                counts["errors"] += 1
                error = ET.SubElement(case, "error", type="error", message=_clean(record.summary))
                error.text = _details(record)
            elif record.status == "skip":
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=_clean(record.summary))
            if regressions and record.status in ("pass", "warn"):
                counts["failures"] += 1
                text = "; ".join(r.message for r in regressions)
                regressed = ET.SubElement(case, "failure", type="regression",
                                          message=_clean(f"regression: {text}"))
                regressed.text = _clean(text)
            out = [_details(record)]
            # One rank has no bus bandwidth: an old record's figure is left out, as Prometheus and history do.
            metrics = {k: v for k, v in record.metrics.items()
                       if k != "sizes" and not (k == "busbw_gbps" and one_rank(record))}
            if metrics:
                out.append("metrics: " + _clean(json.dumps(metrics, sort_keys=True, default=str)))
            ET.SubElement(case, "system-out").text = "\n".join(out)
        elapsed = sum(r.duration_s for r in records)
        suite.set("tests", str(len(records)))
        suite.set("failures", str(counts["failures"]))
        suite.set("errors", str(counts["errors"]))
        suite.set("skipped", str(counts["skipped"]))
        suite.set("time", _seconds(elapsed))
        totals["tests"] += len(records)
        totals["failures"] += counts["failures"]
        totals["errors"] += counts["errors"]
        totals["time"] += elapsed
    root.set("tests", str(int(totals["tests"])))
    root.set("failures", str(int(totals["failures"])))
    root.set("errors", str(int(totals["errors"])))
    root.set("time", _seconds(totals["time"]))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
