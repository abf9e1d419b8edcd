"""The facts parsers from data, as pyinfra tests its facts: one JSON case per captured output, one generic runner.

Layout: ``tests/data/facts/<parser>/<case>.json``, the folder named after a public function of
:mod:`accelstack.facts.parsers`, :mod:`accelstack.vendors.parsing` or a vendor's parsers
(``accelstack.vendors.<vendor>.parsers``: NVIDIA's, Ascend's)::

    {"parser": "parse_os_release",                  # must equal the folder's name
     "source": "where the input comes from (capture, reference note, H100 bundle, lab)",
     "input": "captures/os_release_debian12.txt",   # a file under tests/data ...
     "input_text": "NAME=...\\n",                    # ... or the text itself (exactly one of the two)
     "more_inputs": [{"input": "..."} | {"input_text": "..."}],   # further positional text arguments
     "kwargs": {"sep": ":"},                        # keyword arguments, plain values
     "expect": {"pretty_name": "Debian GNU/Linux 12 (bookworm)", "devices.0.name": "GPU0"},
     "expect_value": ...,                           # the whole result (for parsers returning str, dict, list)
     "raises": "ValueError", "match": "regex",      # instead of expect: the parser must raise
     "wrong_today": {"gpus.0.power_draw_w": {"parser_gives": null, "capture_says": 72.13, "why": "..."}}}

``wrong_today`` records a parser that disagrees with a real capture (a defect in src/, reported, not fixed by the
case): the case asserts the parser still gives ``parser_gives``, so the fix fails the case and the field moves
to ``expect`` with the capture's value.

The result is made plain data first (``dataclasses.asdict``, tuples as lists, integer dict keys as strings). An
``expect`` key is a dotted path into it: a dict key, a list index (``-1`` counts from the end), ``#`` for a length, ``*`` for every element
of a list (the rest of the path is applied to each, giving a list). A path that does not exist, an unknown
parser, a key the format does not know, or a case that expects nothing fails the case: a typo cannot make a case
vacuous. :func:`test_every_parser_has_a_case` holds every public ``parse_*`` function to at least one case.

Host-side twins: a host script cannot import the package (it runs on the host's python, stdlib only), so some
parse the same tool output again (the vendors' host-side modules: ``nvidia-smi -q -x``, ``npu-smi info``, its
``Key : value`` views; validators/network.py: ``key=value`` files, ``hccn_tool -ip -g``, /etc/hccn.conf).
:data:`TWINS` names them; every case of such a parser also runs the twin on the same input and asserts both give
the same fields where their results overlap (and both refuse what one refuses), so neither drifts unseen.

Tests that need logic (round trips, properties, loops) stay in tests/test_facts_parsers.py.
"""

from __future__ import annotations

import builtins
import dataclasses
import importlib
import inspect
import json
import re
from pathlib import Path
from typing import Any

import pytest

from accelstack.facts import parsers as facts_parsers
from accelstack.vendors import parsing, vendors

from .helpers import load_validator, load_vendor_hostside

DATA = Path(__file__).resolve().parent / "data"
FACTS = DATA / "facts"
CASES = sorted(FACTS.glob("*/*.json"))
KEYS = {"parser", "source", "about", "input", "input_text", "more_inputs", "kwargs", "expect", "expect_value",
        "raises", "match", "wrong_today"}

# Public parse_* functions with no case, each with the reason. Empty today: add a line only with a reason a
# reviewer would accept (a parser no captured output exists for is not one: write a synthetic_ capture).
EXEMPT: dict[str, str] = {}



def _parser_modules() -> list[Any]:
    """Where the parsers live: the facts', the shared helpers', each vendor's (``<vendor>.parsers``)."""
    modules: list[Any] = [facts_parsers, parsing]
    for vendor in vendors():
        try:
            modules.append(importlib.import_module(f"accelstack.vendors.{vendor.name}.parsers"))
        except ModuleNotFoundError:
            pass  # a vendor without a tool of its own (cpu)
    return modules


MODULES = _parser_modules()
# Every public function of those modules by name, in the module that defines it (a name imported from another is
# the other's): a case folder names one of these.
PARSERS: dict[str, Any] = {name: f for m in MODULES for name, f in inspect.getmembers(m, inspect.isfunction)
                           if not name.startswith("_") and f.__module__ == m.__name__}

class CaseError(AssertionError):
    """A case that is wrong (its expectation fails) or malformed (it could not be checked at all)."""


def plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return plain(dataclasses.asdict(value))
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):  # integer keys as JSON writes them (parse_hccn_conf's device ids)
        return {str(k) if isinstance(k, int) else k: plain(v) for k, v in value.items()}
    return value


def walk(value: Any, parts: list[str], path: str) -> Any:
    """The value at ``parts``; a segment that does not exist is a CaseError naming the whole path."""
    if not parts:
        return value
    head, rest = parts[0], parts[1:]
    if head == "#":
        if not isinstance(value, (list, dict, str)):
            raise CaseError(f"{path}: '#' on a {type(value).__name__}, which has no length")
        return walk(len(value), rest, path)
    if head == "*":
        if not isinstance(value, list):
            raise CaseError(f"{path}: '*' on a {type(value).__name__}, not a list")
        return [walk(v, rest, path) for v in value]
    if isinstance(value, dict):
        if head not in value:
            raise CaseError(f"{path}: no field {head!r} (there are: {', '.join(map(str, value)) or 'none'})")
        return walk(value[head], rest, path)
    if isinstance(value, list):
        if not re.fullmatch(r"-?\d+", head):
            raise CaseError(f"{path}: {head!r} indexes a list (use a number, '#' or '*')")
        index = int(head)
        if not -len(value) <= index < len(value):
            raise CaseError(f"{path}: index {index} out of a list of {len(value)}")
        return walk(value[index], rest, path)
    raise CaseError(f"{path}: {head!r} goes inside a {type(value).__name__}")


def text_of(spec: dict[str, Any], where: str) -> str:
    given = [k for k in ("input", "input_text") if k in spec]
    if len(given) != 1:
        raise CaseError(f"{where}: give exactly one of input (a file under tests/data) or input_text")
    if "input_text" in spec:
        return str(spec["input_text"])
    path = DATA / spec["input"]
    if not path.is_file():
        raise CaseError(f"{where}: input {spec['input']} is not a file under tests/data")
    return path.read_text(encoding="utf-8")


def parser_named(name: str) -> Any:
    function = PARSERS.get(name)
    if name.startswith("_") or function is None:
        raise CaseError(f"no public parser {name!r} in {', '.join(m.__name__ for m in MODULES)}")
    return function


def run_case(case: dict[str, Any], folder: str) -> int:
    """Check one case; returns how many expectations it checked (a raise counts as one)."""
    unknown = set(case) - KEYS
    if unknown:
        raise CaseError(f"unknown key(s) {sorted(unknown)}; known: {sorted(KEYS)}")
    if case.get("parser") != folder:
        raise CaseError(f"parser {case.get('parser')!r} is not the folder's name {folder!r}")
    if not str(case.get("source", "")).strip():
        raise CaseError("a case says where its input comes from (source)")
    function = parser_named(folder)
    args = [text_of(case, "input")] + [text_of(more, f"more_inputs[{i}]")
                                       for i, more in enumerate(case.get("more_inputs") or [])]
    kwargs = case.get("kwargs") or {}
    if "raises" in case:
        if "expect" in case or "expect_value" in case:
            raise CaseError("a case either raises or expects a result, not both")
        wanted = getattr(builtins, str(case["raises"]), None)
        if not (isinstance(wanted, type) and issubclass(wanted, Exception)):
            raise CaseError(f"raises: {case['raises']!r} is not a builtin exception")
        try:
            function(*args, **kwargs)
        except wanted as exc:
            if "match" in case and not re.search(case["match"], str(exc)):
                raise CaseError(f"raised {exc!r}, which does not match {case['match']!r}") from exc
            return 1
        raise CaseError(f"{folder} did not raise {case['raises']}")
    if "match" in case:
        raise CaseError("match goes with raises")
    result = plain(function(*args, **kwargs))
    checked = 0
    if "expect_value" in case:
        if result != case["expect_value"]:
            raise CaseError(f"result {result!r} != expected {case['expect_value']!r}")
        checked += 1
    for path, want in (case.get("expect") or {}).items():
        got = walk(result, path.split(".") if path else [], path)
        if got != want:
            raise CaseError(f"{path}: got {got!r}, expected {want!r}")
        checked += 1
    for path, wrong in (case.get("wrong_today") or {}).items():
        if set(wrong) != {"parser_gives", "capture_says", "why"} or wrong["parser_gives"] == wrong["capture_says"]:
            raise CaseError(f"wrong_today {path}: give parser_gives, capture_says (different) and why")
        got = walk(result, path.split("."), path)
        if got == wrong["capture_says"]:
            raise CaseError(f"{path}: the parser gives {got!r} now, as the capture says: move it to expect")
        if got != wrong["parser_gives"]:
            raise CaseError(f"{path}: got {got!r}, recorded as wrong with {wrong['parser_gives']!r}")
        checked += 1
    if not checked:
        raise CaseError("the case expects nothing (give expect, expect_value or raises)")
    return checked


@pytest.mark.parametrize("path", CASES, ids=[f"{c.parent.name}/{c.stem}" for c in CASES])
def test_fact_case(path: Path) -> None:
    run_case(json.loads(path.read_text(encoding="utf-8")), path.parent.name)


# ----- host-side twins -----

def _yes(value: str | None) -> bool | None:
    return None if value is None else value.strip().lower() in ("yes", "active", "true", "enabled")


def _smi_xml(facts: Any, host: Any) -> tuple[Any, Any]:
    """What parse_nvidia_smi_xml and the NVIDIA host-side parse_smi_xml both read, GPU by GPU."""
    def index(gpu: Any, position: int) -> int:
        return gpu.minor_number if gpu.minor_number is not None else position

    mine = [{"index": index(g, i), "bus_id": g.bus_id, "name": g.product_name, "ecc_mode": g.ecc_mode,
             "temperature_c": g.temperature_c, "pcie_gen": g.pcie_gen_current, "reset_required": _yes(g.reset_required)}
            for i, g in enumerate(facts.gpus)]
    theirs = [{"index": g["index"], "bus_id": g["bus_id"], "name": g["name"], "ecc_mode": g["ecc_mode"],
               "temperature_c": g["temperature"]["gpu_c"], "pcie_gen": g["pcie"]["current_gen"],
               "reset_required": g["reset_required"]} for g in host]
    return mine, theirs


def _npu_table(facts: Any, host: Any) -> tuple[Any, Any]:
    """What parse_npu_smi_info and the Ascend host-side parse_npu_table both read: each chip, each process."""
    chips, processes = host
    mine = ([(c.npu_id, c.chip_id, c.name, c.health, c.temp_c, c.aicore_pct, c.hbm_used_mb, c.hbm_total_mb)
             for c in facts.chips], [(p.npu_id, p.pid) for p in facts.processes])
    theirs = ([(c["npu_id"], c["chip_id"], c["name"], c["health"], c["temp"], c["aicore"], c["hbm_used"],
                c["hbm_total"]) for c in chips], [(p["npu_id"], p["pid"]) for p in processes])
    return mine, theirs


def _npu_board(facts: Any, host: Any) -> tuple[Any, Any]:
    """The Ascend host-side parse_kv reads ``npu-smi info -t board|health|ecc`` as the board parser's key-value
    lines."""
    mine = {"npu_id": facts.npu_id, "chip_name": facts.chip_name, "software_version": facts.software_version}
    as_int = host.get("NPU ID")
    theirs = {"npu_id": int(as_int) if as_int and as_int.isdigit() else None,
              "chip_name": host.get("Chip Name") or host.get("NPU Name") or None,
              "software_version": host.get("Software Version")}
    return mine, theirs


def _colon_key_values(facts: Any, host: Any) -> tuple[Any, Any]:
    return facts, host


# facts parser -> [(validator, or vendor:NAME for a vendor's host-side module, its function, how its arguments come
# from the case's, what both results share)]
TWINS: dict[str, list[tuple[str, str, Any, Any]]] = {
    "parse_nvidia_smi_xml": [("vendor:nvidia", "parse_smi_xml", lambda text, **kw: (text,), _smi_xml)],
    "parse_npu_smi_info": [("vendor:ascend", "parse_npu_table", lambda text, **kw: (text,), _npu_table)],
    "parse_npu_smi_board": [("vendor:ascend", "parse_kv", lambda text, **kw: (text,), _npu_board)],
    "parse_key_values": [
        ("network", "parse_key_values", lambda text, sep="=", **kw: (text, sep), lambda f, h: (f, h)),
        # npu-smi's ``Key : value`` views only: parse_kv keeps quotes and ``#`` lines, which npu-smi never prints.
        ("vendor:ascend", "parse_kv", lambda text, sep="=", **kw: (text,) if sep == ":" else None, _colon_key_values),
    ],
    "parse_hccn_ip": [("network", "parse_hccn_ip", lambda text, **kw: (text,),
                       lambda f, h: ((f.ipaddr, f.netmask), h))],
    "parse_hccn_conf": [("network", "parse_hccn_conf", lambda text, **kw: (text,),
                         lambda f, h: (f, {device: fields["address"] for device, fields in h.items()}))],
}
TWIN_CASES = [c for c in CASES if c.parent.name in TWINS]


def host_module(script: str) -> Any:
    """A validator by its name, or a vendor's host-side module (``vendor:ascend``)."""
    vendor = script.partition("vendor:")[2]
    return load_vendor_hostside(vendor) if vendor else load_validator(script)


def run_twins(case: dict[str, Any], folder: str) -> int:
    """Run each host-side twin of the case's parser on the case's input; returns how many shared views were
    compared and found non-empty (so a table of twins that compares nothing is caught)."""
    text = text_of(case, "input")
    kwargs = case.get("kwargs") or {}
    compared = 0
    for script, name, arguments, shared in TWINS[folder]:
        args = arguments(text, **kwargs)
        if args is None:
            continue
        twin = getattr(host_module(script), name)
        if "raises" in case:
            wanted = getattr(builtins, str(case["raises"]))
            with pytest.raises(wanted):
                twin(*args)
            continue
        mine, theirs = shared(PARSERS[folder](text, **kwargs), twin(*args))
        assert plain(mine) == plain(theirs), f"{script}.{name} disagrees with {folder}"
        compared += _has_value(plain(mine))
    return compared


def _has_value(value: Any) -> bool:
    """Some leaf that is a value: ``([], [])`` or ``(None, None)`` compares nothing."""
    if isinstance(value, dict):
        return any(_has_value(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_value(v) for v in value)
    return value is not None and value != ""


@pytest.mark.parametrize("path", TWIN_CASES, ids=[f"{c.parent.name}/{c.stem}" for c in TWIN_CASES])
def test_host_side_twin_agrees(path: Path) -> None:
    run_twins(json.loads(path.read_text(encoding="utf-8")), path.parent.name)


def test_every_twin_compares_something_real() -> None:
    for folder in TWINS:
        assert folder in PARSERS, folder
        cases = [json.loads(c.read_text(encoding="utf-8")) for c in TWIN_CASES if c.parent.name == folder]
        assert sum(run_twins(case, folder) for case in cases), f"{folder}: no case gives its twins a field to compare"


def test_a_drifted_twin_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    ascend = load_vendor_hostside("ascend")
    monkeypatch.setattr(ascend, "number", lambda value: None)  # a twin that stops reading numbers
    case = json.loads((FACTS / "parse_npu_smi_info" / "a2_910b3_25.2.0.json").read_text(encoding="utf-8"))
    with pytest.raises(AssertionError, match="parse_npu_table disagrees with parse_npu_smi_info"):
        run_twins(case, "parse_npu_smi_info")


def public_parsers() -> list[str]:
    return sorted(name for name in PARSERS if name.startswith("parse_"))


def test_every_parser_has_a_case() -> None:
    folders = {p.name for p in FACTS.iterdir() if p.is_dir() and any(p.glob("*.json"))}
    names = public_parsers()
    assert len(names) > 20, names  # the scan itself works
    missing = [n for n in names if n not in folders and n not in EXEMPT]
    assert not missing, f"parsers with no case in tests/data/facts/ and no exemption: {missing}"
    stale = sorted(set(EXEMPT) & folders)
    assert not stale, f"exempted but they have cases now: drop them from EXEMPT: {stale}"
    strays = sorted(folders - set(PARSERS))
    assert not strays, f"case folders named after no public function of the parser modules: {strays}"


# ----- the runner is not a rubber stamp -----

GOOD = {"parser": "parse_os_release", "source": "the Debian 12 capture", "input": "captures/os_release_debian12.txt",
        "expect": {"id": "debian"}}


@pytest.mark.parametrize(("change", "message"), [
    ({"expect": {"id": "ubuntu"}}, "expected 'ubuntu'"),
    ({"expect": {"idd": "debian"}}, "no field 'idd'"),
    ({"expect": {"id.0": "d"}}, "goes inside a str"),
    ({"expect": {}}, "expects nothing"),
    ({"parser": "parse_os_releases"}, "is not the folder's name"),
    ({"expct": {"id": "debian"}}, "unknown key"),
    ({"source": ""}, "source"),
    ({"input": "captures/nowhere.txt"}, "is not a file"),
    ({"input_text": "ID=debian\n"}, "exactly one of"),
    ({"expect": None, "raises": "ValueError"}, "did not raise"),
    ({"wrong_today": {"id": {"parser_gives": "x", "capture_says": "debian", "why": "w"}}}, "move it to expect"),
    ({"wrong_today": {"id": {"parser_gives": "x", "capture_says": "y", "why": "w"}}}, "recorded as wrong with 'x'"),
    ({"wrong_today": {"id": {"parser_gives": "x", "capture_says": "x", "why": "w"}}}, "(different)"),
])
def test_a_wrong_or_malformed_case_fails(change: dict[str, Any], message: str) -> None:
    case = {**GOOD, **change}
    folder = "parse_os_release"
    with pytest.raises(CaseError, match=re.escape(message)):
        run_case({k: v for k, v in case.items() if v is not None}, folder)


def test_unknown_parser_and_paths_fail_loudly() -> None:
    with pytest.raises(CaseError, match="no public parser 'parse_nothing'"):
        run_case({**GOOD, "parser": "parse_nothing"}, "parse_nothing")
    with pytest.raises(CaseError, match="no public parser '_snippet'"):
        run_case({**GOOD, "parser": "_snippet"}, "_snippet")
    topo = {"parser": "parse_nvidia_topo", "source": "x", "input": "captures/nvidia_smi_topo_m_2x5090.txt"}
    assert run_case({**topo, "expect": {"devices.#": 2, "devices.-1": "GPU1"}}, "parse_nvidia_topo") == 2
    with pytest.raises(CaseError, match="index 2 out of a list of 2"):
        run_case({**topo, "expect": {"devices.2": "GPU2"}}, "parse_nvidia_topo")
    with pytest.raises(CaseError, match="'\\*' on a dict"):
        run_case({**topo, "expect": {"links.*": []}}, "parse_nvidia_topo")
