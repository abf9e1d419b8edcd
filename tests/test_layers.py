"""Output is a layer: domain modules return values; only renderers and tasks show them to a person.

A module may import rich or call print only if it is a task (``tasks/``), a command line (``cli.py``, any
``__main__.py``), the record reporters (``results/output.py``), the reports (``report/``), or a package's renderer
(``<package>/render.py``). Host-side scripts print their one JSON document by design and are not control-side
code. Anything else that wants to show something returns it, and a renderer draws it.

Drawing (tables, panels, styled text, live displays: any rich module but ``rich.console``'s ``Console``) is
narrower still: only a renderer, the reports and the record reporters draw. A task parses its flags, calls the
package, and prints what a renderer returned with a ``Console``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import accelstack

PACKAGE = Path(accelstack.__file__).parent
ALLOWED_FOLDERS = ("tasks", "report", "hostside")
ALLOWED_FILES = ("cli.py", "results/output.py")
DRAWING_FOLDERS = ("report",)
DRAWING_FILES = ("results/output.py",)


def allowed(relative: Path) -> bool:
    return (relative.parts[0] in ALLOWED_FOLDERS or relative.as_posix() in ALLOWED_FILES
            or relative.name in ("render.py", "__main__.py"))


def draws(relative: Path) -> bool:
    return (relative.parts[0] in DRAWING_FOLDERS or relative.as_posix() in DRAWING_FILES
            or relative.name == "render.py")


def drawing_imports(tree: ast.AST) -> list[str]:
    """Where a module imports anything of rich but ``from rich.console import Console``, as ``line: what``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name.split(".")[0] == "rich"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "rich":
            names = [a.name for a in node.names]
            if node.module != "rich.console" or names != ["Console"] * len(names):
                found.append(f"{node.lineno}: from {node.module} import {', '.join(names)}")
    return found


def output_calls(tree: ast.AST) -> list[str]:
    """Where a module imports rich or calls print, as ``line: what``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name.split(".")[0] == "rich"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "rich":
            found.append(f"{node.lineno}: from {node.module} import ...")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            found.append(f"{node.lineno}: print(...)")
    return found


def test_the_check_sees_rich_imports_and_prints() -> None:
    source = "import rich\nfrom rich.table import Table\nimport os, rich.console\nprint('x')\nlog.print('y')\n"
    assert output_calls(ast.parse(source)) == ["1: import rich", "2: from rich.table import ...",
                                               "3: import rich.console", "4: print(...)"]
    assert output_calls(ast.parse("from .render import table\nimport richer\n")) == []
    assert allowed(Path("stacks/render.py")) and allowed(Path("tasks/report.py"))
    assert allowed(Path("validate/checks/__main__.py"))  # a command line, as cli.py
    assert not allowed(Path("flows/fleetcheck/run.py")) and not allowed(Path("stacks/drift.py"))


def offenders(exempt: Callable[[Path], bool], find: Callable[[ast.AST], list[str]]) -> dict[str, list[str]]:
    """What ``find`` reports in every module of the package that ``exempt`` does not let off, by path."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if not exempt(relative):
            lines = find(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
            if lines:
                found[relative.as_posix()] = lines
    return found


def test_only_tasks_and_renderers_print_or_import_rich() -> None:
    found = offenders(allowed, output_calls)
    assert found == {}, "return values and draw them in <package>/render.py (or the task): " + repr(found)


def test_the_check_sees_drawing_imports() -> None:
    source = ("from rich.console import Console\nfrom rich.table import Table\nfrom rich.console import Group\n"
              "import rich.panel\nfrom rich.text import Text\nfrom .render import table\n")
    assert drawing_imports(ast.parse(source)) == ["2: from rich.table import Table", "3: from rich.console import Group",
                                                  "4: import rich.panel", "5: from rich.text import Text"]
    assert draws(Path("history/render.py")) and draws(Path("report/console.py")) and draws(Path("results/output.py"))
    assert not draws(Path("tasks/report.py")) and not draws(Path("stacks/drift.py")) and not draws(Path("cli.py"))


def test_only_renderers_reports_and_reporters_draw() -> None:
    found = offenders(draws, drawing_imports)
    assert found == {}, "build tables in <package>/render.py; a task prints what it returns: " + repr(found)


def lab_imports(tree: ast.AST) -> list[str]:
    """Where a module imports the lab (``accelstack_lab``), as ``line: what``."""
    found = []
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
        found += [f"{node.lineno}: {name}" for name in names if name.split(".")[0] == "accelstack_lab"]
    return found


def test_no_module_of_the_package_imports_the_lab() -> None:
    """The lab is a checkout's test tooling, outside the package the wheel ships: nothing shipped may need it."""
    assert lab_imports(ast.parse("import accelstack_lab.simulated\nfrom accelstack_lab import Lab\n")) == \
        ["1: accelstack_lab.simulated", "2: accelstack_lab"]
    assert not (PACKAGE / "lab").exists()
    found = offenders(lambda relative: False, lab_imports)
    assert found == {}, "the package must not import the lab (accelstack_lab): " + repr(found)
