"""The gate on host-side code: every script in ``src/accelstack/hostside/`` must run on the oldest python a host
may have, Python 3.6 (EulerOS and Kylin ship it).

``ast.parse(..., feature_version=(3, 6))`` catches the grammar 3.6 lacks (walrus, positional-only parameters,
``f"{x=}"``, ``match``), and nothing else: ``from __future__ import annotations`` parses, but 3.6 refuses it at
compile time ("future feature annotations is not defined"); an API that appeared later parses and then fails
at run time, on the host. So the gate also walks the tree for those, from a list of the ones a host-side script
is likely to reach for (a list, not a proof). Every problem is named as ``file:line: what``.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

from accelstack.paths import hostside

HOSTSIDE = Path(__file__).resolve().parents[1] / "src" / "accelstack" / "hostside"
OLDEST = (3, 6)

# Imports of modules newer than 3.6.
NEW_MODULES = {"dataclasses": "3.7", "contextvars": "3.7", "importlib.resources": "3.7",
               "importlib.metadata": "3.8", "zoneinfo": "3.9", "graphlib": "3.9", "tomllib": "3.11"}
# module.attribute, newer than 3.6.
NEW_MODULE_ATTRIBUTES = {
    ("contextlib", "nullcontext"): "3.7", ("asyncio", "run"): "3.7", ("asyncio", "create_task"): "3.7",
    ("time", "time_ns"): "3.7", ("time", "monotonic_ns"): "3.7", ("time", "perf_counter_ns"): "3.7",
    ("time", "process_time_ns"): "3.7", ("shlex", "join"): "3.8", ("math", "prod"): "3.8",
    ("math", "isqrt"): "3.8", ("math", "dist"): "3.8", ("functools", "cached_property"): "3.8",
    ("functools", "cache"): "3.9", ("os", "waitstatus_to_exitcode"): "3.9",
}
# Methods whose names no 3.6 type has (str, bytes, datetime, pathlib).
NEW_METHODS = {"isascii": "3.7", "fromisoformat": "3.7", "removeprefix": "3.9", "removesuffix": "3.9",
               "is_relative_to": "3.9", "with_stem": "3.9"}
# subprocess keywords newer than 3.6 (3.6 spells them stdout=PIPE, stderr=PIPE and universal_newlines=True).
SUBPROCESS_CALLS = {"run", "Popen", "call", "check_call", "check_output"}
NEW_SUBPROCESS_KEYWORDS = {"capture_output": "3.7", "text": "3.7"}
# Builtin generics in an annotation are evaluated at def time: TypeError before 3.9.
BUILTIN_GENERICS = {"list", "dict", "tuple", "set", "frozenset", "type"}


def host_scripts(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.py"))


def grammar_problems(folder: Path) -> list[str]:
    """Every reason a script under ``folder`` would not run on Python 3.6, as ``relative/path.py:line: what``."""
    problems = []
    for path in host_scripts(folder):
        name = path.relative_to(folder).as_posix()
        source = path.read_text(encoding="utf-8")
        try:
            ast.parse(source, filename=name, feature_version=OLDEST)
        except SyntaxError as err:
            problems.append(f"{name}:{err.lineno}: not Python 3.6 grammar: {err.msg}")
        try:
            tree = ast.parse(source, filename=name)
        except SyntaxError:
            continue  # not even this python's grammar: the line above names it
        problems.extend(f"{name}:{line}: {what}" for line, what in sorted(_newer_than_36(tree, source)))
    return problems


def _guarded_imports(tree: ast.AST) -> set[int]:
    """Lines of imports inside a ``try`` whose handlers catch the import failing: a fallback, fine on 3.6."""
    catching = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        names = set()
        for handler in node.handlers:
            kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
            names.update("BaseException" if kind is None else getattr(kind, "id", "") for kind in kinds)
        if names & catching:
            guarded.update(n.lineno for stmt in node.body for n in ast.walk(stmt)
                           if isinstance(n, ast.Import | ast.ImportFrom))
    return guarded


def _newer_than_36(tree: ast.AST, source: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    lines = source.splitlines()
    guarded = _guarded_imports(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            if any(alias.name == "annotations" for alias in node.names):
                found.append((node.lineno, "from __future__ import annotations: Python 3.6 refuses it "
                                           "(future feature annotations is not defined)"))
        if isinstance(node, ast.Import | ast.ImportFrom) and node.lineno not in guarded:
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if isinstance(node, ast.ImportFrom) and node.module:
                modules += [f"{node.module}.{a.name}" for a in node.names]
            for module in modules:
                if module in NEW_MODULES:
                    found.append((node.lineno, f"imports {module}: new in Python {NEW_MODULES[module]}"))
        if isinstance(node, ast.JoinedStr):
            found.append((node.lineno, "f-string: host-side code uses %-formatting (Python 3.12+ parses "
                                       "f-strings 3.6 refuses, PEP 701, so this gate cannot vouch for one)"))
        if isinstance(node, ast.Attribute):
            base = node.value.id if isinstance(node.value, ast.Name) else None
            if base is not None and (base, node.attr) in NEW_MODULE_ATTRIBUTES:
                found.append((node.lineno, f"{base}.{node.attr}: new in Python "
                                           f"{NEW_MODULE_ATTRIBUTES[(base, node.attr)]}"))
            elif node.attr in NEW_METHODS:
                found.append((node.lineno, f".{node.attr}(): new in Python {NEW_METHODS[node.attr]}"))
        if isinstance(node, ast.Call):
            found.extend(_call_problems(node))
        if isinstance(node, ast.Return | ast.Yield) and isinstance(node.value, ast.Tuple):
            if any(isinstance(e, ast.Starred) for e in node.value.elts) and not _parenthesized(node.value, lines):
                found.append((node.lineno, "unparenthesized starred tuple in return/yield: Python 3.8"))
        for annotation in _annotations(node):
            for part in ast.walk(annotation):
                if (isinstance(part, ast.Subscript) and isinstance(part.value, ast.Name)
                        and part.value.id in BUILTIN_GENERICS):
                    found.append((part.lineno, f"{part.value.id}[...] in an annotation: evaluated at def time, "
                                               "a TypeError before Python 3.9"))
                if isinstance(part, ast.BinOp) and isinstance(part.op, ast.BitOr):
                    found.append((part.lineno, "X | Y in an annotation: evaluated at def time, a TypeError "
                                               "before Python 3.10"))
    return found


def _call_problems(node: ast.Call) -> list[tuple[int, str]]:
    func = node.func
    if isinstance(func, ast.Name) and func.id == "breakpoint":
        return [(node.lineno, "breakpoint(): new in Python 3.7")]
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name not in SUBPROCESS_CALLS:
        return []
    return [(node.lineno, f"{name}({kw.arg}=...): new in Python {NEW_SUBPROCESS_KEYWORDS[kw.arg]}")
            for kw in node.keywords if kw.arg in NEW_SUBPROCESS_KEYWORDS]


def _annotations(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        args = node.args
        every = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
        return [a.annotation for a in every if a.annotation is not None] + ([node.returns] if node.returns else [])
    if isinstance(node, ast.AnnAssign):
        return [node.annotation]
    return []


def _parenthesized(node: ast.Tuple, lines: list[str]) -> bool:
    # Since 3.8 a parenthesized tuple's position includes its opening parenthesis.
    return lines[node.lineno - 1][node.col_offset:node.col_offset + 1] == "("


# ----- the gate -----

def test_every_host_side_script_runs_on_python_36() -> None:
    scripts = {p.relative_to(HOSTSIDE).as_posix() for p in host_scripts(HOSTSIDE)}
    # The gate looks where the package ships host-side code, and finds the validators and the probes there.
    assert hostside() == HOSTSIDE
    assert {"validators/_common.py", "validators/collectives.py", "probes/stack_snippet.py",
            "probes/net_snippet.py", "probes/collect_probe.py"} <= scripts
    assert grammar_problems(HOSTSIDE) == []


def test_every_vendors_host_side_module_runs_on_python_36(tmp_path: Path) -> None:
    # A vendor's host-side half lives in its folder (vendors/<name>/hostside.py) and runs beside the validators.
    from accelstack.vendors import vendors

    modules = [path for path in (v.hostside_module() for v in vendors()) if path is not None]
    assert {p.parent.name for p in modules} >= {"cpu", "nvidia", "ascend"}
    for path in modules:
        (tmp_path / f"vendor_{path.parent.name}.py").write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    assert grammar_problems(tmp_path) == []


PLANTED = {
    "validators/planted_future.py": '"""Planted."""\n\nfrom __future__ import annotations\n\nimport os\n',
    "probes/planted_walrus.py": "import os\n\n\nif (home := os.environ.get('HOME')):\n    print(home)\n",
    "validators/planted_fstring_eq.py": "x = 1\nprint('%d' % x)\nprint(f'{x=}')\n",
    "validators/planted_api.py": (
        "import subprocess\n"
        "import dataclasses\n"
        "proc = subprocess.run(['true'], capture_output=True)\n"
        "out = subprocess.check_output(['true'], text=True)\n"
        "name = 'v1'.removeprefix('v')\n"
        "def f(a, b):\n"
        "    return *a, b\n"
        "def g(a, b):\n"
        "    return (*a, b)\n"
        "def h(x: list[int]) -> 'str':\n"
        "    return '%s' % x\n"
        "print(f'{name}')\n"
        "try:\n"
        "    from importlib import metadata\n"
        "except ImportError:\n"
        "    metadata = None\n"
        "try:\n"
        "    import zoneinfo\n"
        "except KeyError:\n"
        "    pass\n"
    ),
}


def test_the_gate_names_each_planted_problem_by_file_and_line(tmp_path: Path) -> None:
    copy = tmp_path / "hostside"
    shutil.copytree(HOSTSIDE, copy)
    for name, text in PLANTED.items():
        (copy / name).write_text(text)
    problems = grammar_problems(copy)
    where = [p.split(": ", 1)[0] for p in problems]
    assert where == [
        "probes/planted_walrus.py:4",
        "validators/planted_api.py:2", "validators/planted_api.py:3", "validators/planted_api.py:4",
        "validators/planted_api.py:5", "validators/planted_api.py:7", "validators/planted_api.py:10",
        "validators/planted_api.py:12", "validators/planted_api.py:18",  # 14: a fallback; 18: KeyError is no guard
        "validators/planted_fstring_eq.py:3", "validators/planted_fstring_eq.py:3",  # grammar, then the f-string
        "validators/planted_future.py:3",
    ], problems
    text = "\n".join(problems)
    assert "planted_future.py:3: from __future__ import annotations" in text
    assert "planted_walrus.py:4: not Python 3.6 grammar: Assignment expressions" in text
    assert "planted_fstring_eq.py:3: not Python 3.6 grammar: f-string: self documenting" in text
    assert "planted_api.py:3: run(capture_output=...): new in Python 3.7" in text
    assert "planted_api.py:4: check_output(text=...): new in Python 3.7" in text
    assert "planted_api.py:2: imports dataclasses" in text
    assert "planted_api.py:7: unparenthesized starred" in text
    assert "planted_api.py:9" not in text  # the parenthesized form is 3.5 grammar
    assert "planted_api.py:10: list[...] in an annotation" in text


def test_the_gate_fails_on_a_planted_future_import_alone(tmp_path: Path) -> None:
    # The proof: ast with feature_version=(3, 6) parses this line; Python 3.6 does not, and nor does the gate.
    copy = tmp_path / "hostside"
    shutil.copytree(HOSTSIDE, copy)
    script = copy / "validators" / "devices.py"
    lines = script.read_text().splitlines(keepends=True)
    docstring_end = next(i for i, line in enumerate(lines) if i > 0 and line.rstrip().endswith('"""'))
    lines.insert(docstring_end + 1, "from __future__ import annotations\n")
    script.write_text("".join(lines))
    ast.parse(script.read_text(), feature_version=(3, 6))  # what a feature_version check alone would accept
    assert grammar_problems(copy) == [
        f"validators/devices.py:{docstring_end + 2}: from __future__ import annotations: Python 3.6 refuses it "
        "(future feature annotations is not defined)"]
