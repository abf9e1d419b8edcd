"""The signature catalog: ``data/signatures.yml`` loaded, checked and compiled once.

The catalog is data so that a fleet operator can add a signature without touching Python; this module only
refuses entries that would make the diagnosis lie (an unknown cause id, a regex that does not compile, a
``refines`` that points nowhere).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:  # the parser re itself uses; sre_parse is its deprecated alias
    import re._parser as _sre_parse
except ImportError:  # pragma: no cover
    import sre_parse as _sre_parse

from ..errors import ConfigError
from ..paths import package_data
from ..vendors import ANY, Vendor, is_vendor, vendor_names, vendors
from ..yamlfile import load_marked_file
from .causes import check_actor, load_causes
from .structure import EXCEPTION_ANCHORS, NCCL_TESTS_ANCHORS, STRUCTURE_PATTERNS
from .tables import Tables, load_tables

# The fixed vocabulary of cause ids (data/causes.yml): reports, tests and the corpus's labels key on these strings.
CAUSES: tuple[str, ...] = tuple(load_causes())
_REQUIRED = ("id", "cause", "vendor", "title", "patterns", "explanation", "remedy", "priority", "source")
_NAMED_GROUP = re.compile(r"\(\?P<\w+>")
MIN_ANCHOR = 3
# Lines the diagnosis reads for itself, whatever the catalog says: torch's "Last error:" (the cause is on it or on
# the next line) and NCCL's WARN lines (what broke before NCCL's generic "unhandled system error").
DIAGNOSIS_ANCHORS = ("Last error:", "NCCL WARN", "ncclCommInitRank")


@dataclass(frozen=True)
class Signature:
    id: str
    cause: str
    vendor: str
    title: str
    patterns: tuple[re.Pattern[str], ...]
    explanation: str
    remedy: str
    # A check declared (validate/checks/) to confirm this cause on a host; tests/test_checks.py holds it. None where
    # no host check can (the program's own error).
    confirm_with: str | None
    priority: int
    source: str
    symptom: bool = False
    extract_patterns: tuple[re.Pattern[str], ...] = ()
    requires_context: str | None = None
    unless_context: str | None = None
    refines: str | None = None
    when: dict[str, frozenset[Any]] = field(default_factory=dict)
    # Causes this one is a consequence of when they came first (a heartbeat monitor after a collective timeout).
    follows: tuple[str, ...] = ()
    # Who acts, where this signature knows better than its cause's actor (causes.yml).
    actor: str | None = None
    # A finding only when the logs show a failure (a traceback, a signal, a launcher's report): for lines that a
    # component also logs on the way to a retry that succeeds.
    requires_failure: bool = False


@dataclass(frozen=True)
class Catalog:
    signatures: tuple[Signature, ...]
    contexts: dict[str, tuple[re.Pattern[str], ...]]
    # One alternation of every pattern, without group names: most lines of a healthy log are rejected by a
    # single regex search instead of one search per pattern, which is what makes gigabyte logs tractable.
    prefilter: re.Pattern[str]
    context_prefilter: re.Pattern[str]
    nccl_result_codes: dict[int, str] = field(default_factory=dict)
    # Literal strings of which every line that any pattern (signature, extraction or context) can match contains
    # at least one: the prefilter grep (or the block scan) runs on raw bytes before any regex sees a line.
    anchors: tuple[str, ...] = ()
    # A vendor's error code (Ascend's EI0002, EE9999, ERR02200, E30001...) -> what it means; a code not listed here
    # is reported as unknown, with its line, never dropped.
    error_codes: dict[str, dict[str, Any]] = field(default_factory=dict)
    # (vendor, the pattern of its codes) for each vendor whose tables list codes (Vendor.error_code).
    code_patterns: tuple[tuple[Vendor, re.Pattern[str]], ...] = ()
    # The error taxonomies (data/diagnose/): they name the cause of a failure the structure of the log found.
    tables: Tables | None = None
    # The literals of the signatures' own patterns, and of the contexts': a line without one cannot match them, so
    # the (much slower) alternations run only on lines that hold one (the prefilter lets far more lines through:
    # exception lines, error lines, the tables' literals).
    signature_anchors: tuple[str, ...] = ()
    context_anchors: tuple[str, ...] = ()

    def by_id(self, sig_id: str) -> Signature:
        for sig in self.signatures:
            if sig.id == sig_id:
                return sig
        raise KeyError(sig_id)


def _best_anchors(items: Any, icase: bool = False) -> frozenset[tuple[str, bool]] | None:
    """The literal strings one of which every match of the parsed pattern contains (the longest such set)."""
    options: list[frozenset[tuple[str, bool]]] = []
    run: list[str] = []

    def flush() -> None:
        if len(run) >= MIN_ANCHOR:
            options.append(frozenset({("".join(run), icase)}))
        run.clear()

    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            run.append(chr(arg))
            continue
        if name == "AT":  # zero-width (\b, ^): the literals on both sides stay adjacent in the text
            continue
        flush()
        got: frozenset[tuple[str, bool]] | None = None
        if name == "SUBPATTERN":
            _, add_flags, del_flags, sub = arg
            got = _best_anchors(sub, (icase or bool(add_flags & re.I)) and not del_flags & re.I)
        elif name == "BRANCH":
            parts = [_best_anchors(branch, icase) for branch in arg[1]]
            if all(parts):
                got = frozenset().union(*[part for part in parts if part])
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") and arg[0] >= 1:
            got = _best_anchors(arg[2], icase)
        if got:
            options.append(got)
    flush()
    if not options:
        return None
    return max(options, key=lambda option: (min(len(text) for text, _ in option), -len(option)))


def _selective(text: str) -> str:
    """A part of the literal that starts on a rarer byte: the block scan's regex tries every position whose byte
    could start an anchor, so a leading space or bracket (every few bytes of a log) costs five times the speed.
    Any substring of a required literal is still required."""
    core = text.strip(" ,.:;[](){}/=<>'\"-")
    if len(core) < MIN_ANCHOR:
        return text
    upper = re.search(r"[A-Z_]", core)
    if upper and len(core) - upper.start() >= 5:
        core = core[upper.start():]
    return core


def anchors_of(pattern: re.Pattern[str], where: str) -> list[str]:
    """Literal anchors of one pattern, case variants spelled out (grep has no per-pattern -i)."""
    found = _best_anchors(_sre_parse.parse(pattern.pattern))
    if not found:
        raise ConfigError(f"pattern {pattern.pattern!r} has no literal of {MIN_ANCHOR}+ characters that every "
                          "match contains; the prefilter needs one", where=where)
    out: list[str] = []
    for text, icase in sorted(found):
        text = _selective(text)
        variants = (text, text.lower(), text.upper(), text.capitalize()) if icase else (text,)
        out.extend(v for v in variants if v not in out)
    return out


def _compile(pattern: Any, where: str) -> re.Pattern[str]:
    if not isinstance(pattern, str):
        raise ConfigError(f"pattern must be a string, got {pattern!r}", where=where)
    try:
        return re.compile(pattern)
    except re.error as err:
        raise ConfigError(f"pattern {pattern!r} does not compile: {err}", where=where) from None


def _alternation(patterns: list[re.Pattern[str]]) -> re.Pattern[str]:
    if not patterns:
        return re.compile(r"(?!x)x")
    # Group names may repeat across patterns, which one alternation cannot hold: make them anonymous.
    parts = [_NAMED_GROUP.sub("(?:", p.pattern) for p in patterns]
    return re.compile("|".join(f"(?:{part})" for part in parts))


def parse_catalog(data: Any, origin: str = "signatures.yml", tables: Tables | None = None) -> Catalog:
    """Build a catalog from the YAML document's data; ``origin`` names the file in error messages. ``tables``: the
    error taxonomies read beside it (the shipped ones when None)."""
    if not isinstance(data, dict) or not isinstance(data.get("signatures"), list):
        raise ConfigError("expected a mapping with a 'signatures' list", where=origin)
    contexts: dict[str, tuple[re.Pattern[str], ...]] = {}
    for name, pats in (data.get("contexts") or {}).items():
        contexts[str(name)] = tuple(_compile(p, f"{origin}: context {name}") for p in pats)

    signatures: list[Signature] = []
    seen: set[str] = set()
    for index, raw in enumerate(data["signatures"]):
        where = f"{origin}: signature #{index + 1} ({raw.get('id', '?') if isinstance(raw, dict) else '?'})"
        if not isinstance(raw, dict):
            raise ConfigError("a signature must be a mapping", where=where)
        missing = [key for key in _REQUIRED if key not in raw]
        if missing:
            raise ConfigError(f"missing field(s): {', '.join(missing)}", where=where)
        if raw["id"] in seen:
            raise ConfigError(f"duplicate id {raw['id']!r}", where=where)
        seen.add(raw["id"])
        if raw["cause"] not in CAUSES:
            raise ConfigError(f"cause {raw['cause']!r} is not one of the fixed ids: {', '.join(CAUSES)}",
                              where=where)
        bad = [cause for cause in raw.get("follows") or () if cause not in CAUSES]
        if bad:
            raise ConfigError(f"follows names unknown cause(s): {', '.join(map(str, bad))}", where=where)
        if raw["vendor"] != ANY and not is_vendor(raw["vendor"]):
            raise ConfigError(f"vendor {raw['vendor']!r} is not one of {', '.join((*vendor_names(), ANY))}",
                              where=where)
        for key in ("requires_context", "unless_context"):
            if raw.get(key) is not None and raw[key] not in contexts:
                raise ConfigError(f"{key} {raw[key]!r} names no context", where=where)
        patterns = raw["patterns"] if isinstance(raw["patterns"], list) else [raw["patterns"]]
        when = {str(k): frozenset(v) for k, v in (raw.get("when") or {}).items()}
        actor = check_actor(raw["actor"], where) if raw.get("actor") is not None else None
        signatures.append(Signature(
            id=str(raw["id"]),
            cause=raw["cause"],
            vendor=raw["vendor"],
            title=str(raw["title"]),
            patterns=tuple(_compile(p, where) for p in patterns),
            explanation=" ".join(str(raw["explanation"]).split()),
            remedy=" ".join(str(raw["remedy"]).split()),
            confirm_with=str(raw["confirm_with"]) if raw.get("confirm_with") else None,
            priority=int(raw["priority"]),
            source=str(raw["source"]),
            symptom=bool(raw.get("symptom", False)),
            extract_patterns=tuple(_compile(p, where) for p in raw.get("extract_patterns") or ()),
            requires_context=raw.get("requires_context"),
            unless_context=raw.get("unless_context"),
            refines=raw.get("refines"),
            when=when,
            follows=tuple(raw.get("follows") or ()),
            actor=actor,
            requires_failure=bool(raw.get("requires_failure", False)),
        ))
    ids = {sig.id for sig in signatures}
    for sig in signatures:
        if sig.refines is not None and sig.refines not in ids:
            raise ConfigError(f"refines {sig.refines!r}, which is no signature id", where=f"{origin}: {sig.id}")
    all_patterns = [p for sig in signatures for p in (*sig.patterns, *sig.extract_patterns)]
    context_patterns = [p for pats in contexts.values() for p in pats]
    codes = {int(k): str(v) for k, v in (data.get("nccl_result_codes") or {}).items()}
    anchors: list[str] = list(DIAGNOSIS_ANCHORS)
    for sig in signatures:
        for pattern in (*sig.patterns, *sig.extract_patterns):
            anchors.extend(anchors_of(pattern, f"{origin}: {sig.id}"))
    signature_anchors = minimal_anchors(anchors[len(DIAGNOSIS_ANCHORS):])
    context_anchors: list[str] = []
    for name, pats in contexts.items():
        for pattern in pats:
            context_anchors.extend(anchors_of(pattern, f"{origin}: context {name}"))
    anchors.extend(context_anchors)
    tables = tables if tables is not None else load_tables()
    if "ascend_codes" in data:
        raise ConfigError("ascend_codes is a table now: put the codes in a table's codes "
                          "(vendors/ascend/diagnose/ascend-cann.yml)",
                          where=origin)
    error_codes = {code: code_entry(row) for code, row in tables.codes.items()}
    coded = {str(entry["vendor"]) for entry in error_codes.values()}
    code_patterns = tuple((vendor, re.compile(vendor.error_code)) for vendor in vendors()
                          if vendor.name in coded and vendor.error_code)
    for vendor, _pattern in code_patterns:
        anchors.extend(vendor.error_code_anchors)
    anchors.extend(_selective(text) for text in tables.anchors)
    anchors.extend(EXCEPTION_ANCHORS)
    anchors.extend(NCCL_TESTS_ANCHORS)
    for pattern in STRUCTURE_PATTERNS:
        anchors.extend(anchors_of(pattern, "diagnose/structure.py"))
    return Catalog(tuple(signatures), contexts, _alternation(all_patterns), _alternation(context_patterns), codes,
                   minimal_anchors(anchors), error_codes, code_patterns, tables, signature_anchors,
                   minimal_anchors(context_anchors))


def minimal_anchors(anchors: list[str]) -> tuple[str, ...]:
    """The anchors without those that hold another anchor: a line that holds the longer holds the shorter, so the
    prefilter passes the same lines with fewer alternatives (hundreds of table literals hold "Error")."""
    kept: list[str] = []
    for text in sorted(set(anchors), key=lambda text: (len(text), text)):
        if not any(shorter in text for shorter in kept):
            kept.append(text)
    order = {text: index for index, text in enumerate(dict.fromkeys(anchors))}
    return tuple(sorted(kept, key=order.__getitem__))


def code_entry(row: Any) -> dict[str, Any]:
    """A table row as the entry a vendor's error code has in the catalog (also what a code's detail line names)."""
    return {"cause": row.cause, "title": row.title, "meaning": row.meaning, "remedy": row.remedy,
            "confirm_with": None, "priority": row.priority, "source": row.source, "symptom": row.symptom,
            "actor": row.actor, "vendor": row.vendor}




def load_catalog(path: str | Path | None = None) -> Catalog:
    """Read a catalog file; the shipped one when ``path`` is None (cached: compiled once per process)."""
    if path is None:
        return _shipped_catalog()
    return _load(Path(path))


@functools.lru_cache(maxsize=1)
def _shipped_catalog() -> Catalog:
    return _load(package_data("signatures.yml"))


def _load(path: Path) -> Catalog:
    # Safe-load semantics (libyaml's when present); a syntax error or a duplicate key is named at its line.
    return parse_catalog(load_marked_file(path), origin=str(path))
