"""The JSON report: the summary (the same document the fleet check writes as summary.json) and the records."""

from __future__ import annotations

import json
from typing import Any

from .model import ReportData, summary


def render_json(data: ReportData, *, with_records: bool = True) -> str:
    document: dict[str, Any] = {"summary": summary(data)}
    if with_records:
        document["records"] = [record.to_dict() for record in data.records]
    return json.dumps(document, indent=2, default=str) + "\n"
