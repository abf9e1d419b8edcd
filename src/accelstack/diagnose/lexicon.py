"""How error messages name a cause in plain words (``data/lexicon.yml``), for the failures no table row names.

A table names a failure by what a library prints verbatim (a literal, an exception class, a code). Many failures
are a framework's own words in a generic class: vLLM's ``ValueError: Free memory on device ... is less than desired
GPU memory utilization``, Lightning's ``MisconfigurationException: You requested gpu: [1] But your machine only
has: [0]``. The lexicon reads such a message by its words: a rule names its cause when every group of its words is
in the message and none of its ``unless``. It is consulted only where no literal, code or specific class did, and
it outranks only a generic class (a built-in exception that would call the failure the program's own error).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..paths import package_data
from ..yamlfile import load_marked_file
from .causes import Cause, check_actor, load_causes
from .tables import TableRow, check_fields, row_cause

_RULE_KEYS = {"cause", "actor", "all", "unless", "note", "remedy", "source"}
_TEXT_CAP = 2000  # characters of a message read: the words that name a cause are at its start


@dataclass(frozen=True)
class Rule:
    row: TableRow  # how a finding of this rule reads (its cause, title, note, remedy, source)
    groups: tuple[re.Pattern[str], ...]
    unless: re.Pattern[str] | None

    def matches(self, text: str) -> bool:
        return all(group.search(text) for group in self.groups) and not (self.unless and self.unless.search(text))


def _phrases(raw: Any, where: str) -> re.Pattern[str]:
    if not isinstance(raw, list) or not raw or not all(isinstance(p, str) and p.strip() for p in raw):
        raise ConfigError("a group of words is a non-empty list of phrases", where=where)
    # A phrase stands as words: no word character just before or after it ("mem" is not "member").
    alternatives = sorted({re.escape(p.strip().lower()) for p in raw}, key=len, reverse=True)
    return re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + r")(?!\w)")


def parse_lexicon(data: Any, origin: str = "lexicon.yml", causes: dict[str, Cause] | None = None) -> tuple[Rule, ...]:
    causes = causes if causes is not None else load_causes()
    if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
        raise ConfigError("the lexicon is a mapping with id, title, source and a list of rules", where=origin)
    for key in ("id", "title", "source"):
        if not data.get(key):
            raise ConfigError(f"missing field {key}", where=origin)
    rules: list[Rule] = []
    for index, raw in enumerate(data["rules"]):
        where = f"{origin}: rule #{index + 1}"
        if not isinstance(raw, dict):
            raise ConfigError("a rule is a mapping (cause, actor, all, unless, note, remedy, source)", where=where)
        check_fields(raw, _RULE_KEYS, where)
        cause = row_cause(raw, causes, where)
        for key in ("note", "source"):
            if not raw.get(key):
                raise ConfigError(f"a rule says what its words mean and where they come from: missing {key}",
                                  where=where)
        groups = raw.get("all")
        if not isinstance(groups, list) or not groups:
            raise ConfigError("all: a list of groups of words", where=where)
        note = " ".join(str(raw["note"]).split())
        row = TableRow(
            table=str(data["id"]), key=f"{cause.id}#{index + 1}", cause=cause.id,
            actor=check_actor(raw["actor"], f"{where}: actor") if "actor" in raw else cause.actor,
            priority=cause.priority, symptom=cause.symptom, title=f"{note[:1].upper()}{note[1:]}",
            meaning=f"Read from {data['title']}: {note}.",
            remedy=" ".join(str(raw["remedy"]).split()) if raw.get("remedy") else cause.remedy,
            source=" ".join(str(raw["source"]).split()), vendor="any")
        rules.append(Rule(row=row, groups=tuple(_phrases(g, f"{where}: all") for g in groups),
                          unless=_phrases(raw["unless"], f"{where}: unless") if raw.get("unless") else None))
    return tuple(rules)


@functools.lru_cache(maxsize=1)
def load_lexicon() -> tuple[Rule, ...]:
    path = package_data("lexicon.yml")
    return parse_lexicon(load_marked_file(path), str(path))


def lexicon_row(texts: list[str], rules: tuple[Rule, ...] | None = None) -> TableRow | None:
    """The row of the first rule whose words are all in ``texts`` (a failure's own message), else None."""
    text = " ".join(texts)[:_TEXT_CAP].lower()
    if not text.strip():
        return None
    for rule in rules if rules is not None else load_lexicon():
        if rule.matches(text):
            return rule.row
    return None
