"""The error taxonomies as data: ``data/diagnose/*.yml`` and each vendor's (``vendors/<name>/diagnose/*.yml``: CUDA's,
NCCL's, Ascend's) loaded, checked and compiled once.

Each file is one taxonomy (CUDA's runtime errors, NCCL's results, errno, Ascend's codes ...) whose rows map a literal,
an exception class or an error code to a cause of ``causes.yml``. A row names the cause of a failure that the
structure of the log found (see :mod:`.structure`); it never makes a finding on its own, except Ascend's error codes
(``codes``), which CANN prints only for errors. ``data/diagnose/README.md`` documents the format.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..paths import package_data
from ..vendors import ANY, is_vendor, vendor_names, vendors
from ..yamlfile import load_marked_file
from .causes import Cause, check_actor, load_causes

_TABLE_KEYS = {"id", "title", "vendor", "source", "literals", "exceptions", "codes", "code_patterns", "standalone"}
_ROW_KEYS = {"cause", "also", "code", "priority", "actor", "note", "remedy", "secondary", "reports", "generic",
             "title", "meaning", "symptom", "source"}
_WORD = re.compile(r"\w")


@dataclass(frozen=True)
class TableRow:
    table: str  # the taxonomy's id
    key: str  # the literal, class name or code the row is keyed by
    cause: str
    actor: str
    priority: int
    symptom: bool
    title: str
    meaning: str
    remedy: str
    source: str
    vendor: str
    literals: tuple[str, ...] = ()
    code: int | str | None = None
    secondary: bool = False
    # The exception reports a failure another program printed just before it (Triton's PTXASError after ptxas's own
    # line): an error line there that ranks higher names the cause, as for a process's death.
    reports: bool = False
    # The row names a failure only for want of anything better (ENOENT's "No such file or directory", "terminate
    # called after throwing"): words of the failure's own message that the lexicon reads name it instead.
    generic: bool = False
    # The row's table prints only failures (the kernel's hardware errors): a line it names is a failure itself.
    standalone: bool = False

    @property
    def id(self) -> str:
        return f"{self.table}:{self.key}"


@dataclass(frozen=True)
class CodePattern:
    pattern: re.Pattern[str]
    rows: dict[str, TableRow]  # code (as text) -> row


@dataclass(frozen=True)
class Tables:
    rows: tuple[TableRow, ...]
    by_literal: dict[str, TableRow]
    exceptions: dict[str, TableRow]
    codes: dict[str, TableRow]  # Ascend error codes: findings wherever they appear
    code_patterns: tuple[CodePattern, ...]
    # One alternation of every literal, longest first, each bounded where it starts or ends with a word character.
    literal_re: re.Pattern[str]
    # Literals (and the fixed text of each code pattern) that the prefilter must let through.
    anchors: tuple[str, ...]
    files: tuple[str, ...]

    def literal_hits(self, text: str) -> Iterator[tuple[int, TableRow]]:
        """(position, row) of every table literal in ``text``; the longer literal wins where two start together."""
        pos = 0
        search = self.literal_re.search
        while True:
            match = search(text, pos)
            if match is None:
                break
            start = match.start()
            if start and _WORD.match(text[start]) and _WORD.match(text[start - 1]):
                pos = start + 1  # inside a word ("EIO" in "XEIO"): not this literal, maybe one further on
                continue
            yield start, self.by_literal[match.group(0)]
            pos = match.end()
        for code_pattern in self.code_patterns:
            found = code_pattern.pattern.search(text)
            if found:
                row = code_pattern.rows.get(found.group("code").lstrip("0") or "0")
                if row is not None:
                    yield found.start(), row

    def exception_row(self, type_name: str) -> TableRow | None:
        """The row of an exception type, dotted or not: the longest dotted suffix that a table names; else the
        longest class a table names that the name ends with (a subclass named after its base, HTTPTimeoutError;
        two ranks' lines run together, KeyErrorKeyError)."""
        if type_name.endswith(")") and "(" in type_name:
            # Ray's RayTaskError(RuntimeError): the remote error's class is the one that names the cause.
            outer, _, inner = type_name[:-1].partition("(")
            return self.exception_row(inner) or self.exception_row(outer)
        parts = type_name.split(".")
        for start in range(len(parts)):
            row = self.exceptions.get(".".join(parts[start:]))
            if row is not None:
                return row
        name = parts[-1]
        suffixes = [key for key in self.exceptions if "." not in key and name.endswith(key) and name != key
                    and key[0].isupper()]
        return self.exceptions[max(suffixes, key=len)] if suffixes else None


# An underscore may follow a literal: CUDNN_STATUS_BAD_PARAM names cuDNN 9's CUDNN_STATUS_BAD_PARAM_NULL_POINTER.
# A literal that ends in an underscore names every identifier it starts ("Call to ibv_" is NCCL's WARN for any
# verbs call: ibv_reg_mr, ibv_modify_qp), so nothing is asked of what follows it.
_END = r"(?![A-Za-z0-9])"


def literal_trie(literals: list[str]) -> str:
    """One regex of the literals, shaped as a trie so that the regex engine rejects a position after a byte or two
    (hundreds of literals in a plain alternation cost a millisecond a line). Longer continuations come before the
    end of a shorter literal, so a match is the longest literal at its place; a literal that starts or ends with a
    word character must stand as a word there."""
    trie: dict[str, Any] = {}
    for literal in literals:
        node = trie
        for char in literal:
            node = node.setdefault(char, {})
        node[""] = literal  # "" never is a character: it marks where a literal ends

    def emit(node: dict[str, Any]) -> str:
        alternatives = [re.escape(char) + emit(child) for char, child in sorted(node.items()) if char]
        if "" in node:
            alternatives.append(_END if node[""][-1].isalnum() else "")
        if len(alternatives) == 1:
            return alternatives[0]
        return "(?:" + "|".join(alternatives) + ")"

    # The start boundary is checked by the caller (a lookbehind on every branch costs the regex engine its first-byte
    # test at every position).
    return emit(trie) if trie else r"(?!x)x"


def check_fields(raw: dict[str, Any], allowed: set[str], where: str) -> None:
    """Refuse a field the format does not have (a typo would otherwise be ignored)."""
    unknown = set(raw) - allowed
    if unknown:
        raise ConfigError(f"unknown field(s): {', '.join(sorted(map(str, unknown)))}", where=where)


def row_cause(raw: dict[str, Any], causes: dict[str, Cause], where: str) -> Cause:
    """The cause a row (of a table, of the lexicon) names, which must be one of causes.yml."""
    cause = causes.get(raw.get("cause"))  # type: ignore[arg-type]
    if cause is None:
        raise ConfigError(f"cause {raw.get('cause')!r} is not in causes.yml", where=where)
    return cause


def _row(table: dict[str, Any], kind: str, key: str, raw: Any, causes: dict[str, Cause], where: str) -> TableRow:
    if not isinstance(raw, dict):
        raise ConfigError("a row must be a mapping with at least a cause", where=where)
    check_fields(raw, _ROW_KEYS, where)
    cause = row_cause(raw, causes, where)
    also = raw.get("also") or []
    if not isinstance(also, list) or not all(isinstance(text, str) and text for text in also):
        raise ConfigError("also must be a list of literals", where=where)
    actor = check_actor(raw["actor"], where) if "actor" in raw else cause.actor
    if "actor" in raw and not raw.get("note"):
        raise ConfigError("a row that overrides its cause's actor says why in a note", where=where)
    note = " ".join(str(raw.get("note") or raw.get("meaning") or "").split())
    shown = f" ({also[0]})" if also and kind == "literals" else ""
    title = str(raw.get("title") or f"{table['title']} {key}{shown}")
    meaning = note or f"{table['title']} {key}{shown}."
    return TableRow(
        table=str(table["id"]), key=key, cause=cause.id, actor=actor,
        priority=int(raw.get("priority", cause.priority)), symptom=bool(raw.get("symptom", cause.symptom)),
        title=title, meaning=meaning, remedy=" ".join(str(raw.get("remedy") or cause.remedy).split()),
        source=str(raw.get("source") or table["source"]), vendor=str(table["vendor"]),
        literals=(key, *also) if kind == "literals" else tuple(also),
        code=raw.get("code"), secondary=bool(raw.get("secondary", False)), reports=bool(raw.get("reports", False)),
        generic=bool(raw.get("generic", False)),
        standalone=bool(table.get("standalone", False)))


def parse_tables(documents: list[tuple[str, Any]], causes: dict[str, Cause] | None = None) -> Tables:
    """Compile tables from ``(origin, data)`` pairs (the YAML documents as read)."""
    from .catalog import anchors_of  # the prefilter's literal extraction, shared with the signatures

    causes = causes if causes is not None else load_causes()
    rows: list[TableRow] = []
    by_literal: dict[str, TableRow] = {}
    exceptions: dict[str, TableRow] = {}
    codes: dict[str, TableRow] = {}
    patterns: list[CodePattern] = []
    anchors: list[str] = []
    ids: set[str] = set()
    for origin, data in documents:
        if not isinstance(data, dict):
            raise ConfigError("a table is a mapping (id, title, vendor, source, literals/exceptions/codes)",
                              where=origin)
        missing = [key for key in ("id", "title", "vendor", "source") if not data.get(key)]
        if missing:
            raise ConfigError(f"missing field(s): {', '.join(missing)}", where=origin)
        check_fields(data, _TABLE_KEYS, origin)
        if data["id"] in ids:
            raise ConfigError(f"duplicate table id {data['id']!r}", where=origin)
        ids.add(data["id"])
        if data["vendor"] != ANY and not is_vendor(data["vendor"]):
            raise ConfigError(f"vendor {data['vendor']!r} is not one of {', '.join((*vendor_names(), ANY))}",
                              where=origin)
        data = {**data, "source": " ".join(str(data["source"]).split())}
        if not any(data.get(kind) for kind in ("literals", "exceptions", "codes")):
            raise ConfigError("a table needs literals, exceptions or codes", where=origin)
        table_rows: dict[str, TableRow] = {}
        for kind in ("literals", "exceptions", "codes"):
            section = data.get(kind) or {}
            if not isinstance(section, dict):
                raise ConfigError(f"{kind} must map a key to its row", where=origin)
            for key, raw in section.items():
                where = f"{origin}: {kind} {key}"
                key = str(key)
                row = _row(data, kind, key, raw, causes, where)
                rows.append(row)
                table_rows[key] = row
                if kind == "literals":
                    for literal in row.literals:
                        if literal in by_literal:
                            raise ConfigError(f"literal {literal!r} is already the row {by_literal[literal].id}",
                                              where=where)
                        by_literal[literal] = row
                        if not literal.isdigit():
                            # Digits are everywhere in a log: a numeric code (Ascend's 507015) is read on the line
                            # that prints it, which holds an anchor of its own ("error code is", Error, ERR...).
                            anchors.append(literal)
                elif kind == "exceptions":
                    if key in exceptions:
                        raise ConfigError(f"exception {key!r} is already the row {exceptions[key].id}", where=where)
                    exceptions[key] = row
                    # A class's own name is its anchor; a lowercase one (socket.timeout) is a common word, so it
                    # is anchored by its whole dotted name, which is how a traceback prints it.
                    last = key.rsplit(".", 1)[-1]
                    anchors.append(last if last[:1].isupper() else key)
                else:
                    codes[key] = row
        for index, raw in enumerate(data.get("code_patterns") or []):
            where = f"{origin}: code_patterns #{index + 1}"
            if not isinstance(raw, dict) or "pattern" not in raw or "entries" not in raw:
                raise ConfigError("a code pattern is {pattern: REGEX with (?P<code>...), entries: KEY-PREFIX}",
                                  where=where)
            try:
                compiled = re.compile(str(raw["pattern"]))
            except re.error as err:
                raise ConfigError(f"pattern does not compile: {err}", where=where) from None
            if "code" not in compiled.groupindex:
                raise ConfigError("the pattern needs a (?P<code>...) group", where=where)
            named = {str(row.code): row for key, row in table_rows.items()
                     if key.startswith(str(raw["entries"])) and row.code is not None}
            if not named:
                raise ConfigError(f"no row with a code starts with {raw['entries']!r}", where=where)
            patterns.append(CodePattern(compiled, named))
            anchors.extend(anchors_of(compiled, where))
    literal_re = re.compile(literal_trie(list(by_literal)))
    return Tables(rows=tuple(rows), by_literal=by_literal, exceptions=exceptions, codes=codes,
                  code_patterns=tuple(patterns), literal_re=literal_re, anchors=tuple(dict.fromkeys(anchors)),
                  files=tuple(origin for origin, _ in documents))


def table_files(folder: Path | None = None) -> list[Path]:
    """The tables of ``folder``; else the shipped ones: the vendor-neutral ``data/diagnose/*.yml`` and each vendor's
    own (``vendors/<name>/diagnose/*.yml``, Vendor.diagnosis_tables), by file name."""
    if folder is not None:
        return sorted(folder.glob("*.yml"))
    shipped = [*package_data("diagnose").glob("*.yml"), *(p for v in vendors() for p in v.diagnosis_tables())]
    return sorted(shipped, key=lambda path: (path.name, str(path)))


def load_tables(folder: str | Path | None = None) -> Tables:
    """The tables of ``folder``; the shipped ones when None (compiled once per process)."""
    if folder is None:
        return _shipped_tables()
    return _load(Path(folder))


@functools.lru_cache(maxsize=1)
def _shipped_tables() -> Tables:
    return _load(None)


def _load(folder: Path | None) -> Tables:
    # Safe-load semantics (libyaml's when present), a duplicate key an error at its line: a literal written twice
    # in one table would otherwise keep only its last row.
    return parse_tables([(str(path), load_marked_file(path)) for path in table_files(folder)])
