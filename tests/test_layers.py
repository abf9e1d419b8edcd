"""The layers are a test: the package's import direction, held to one list (:data:`LAYERS`, the README's flow), so
the next back-edge fails CI the day it is written; the lab is outside the package and nothing in it imports the lab.

Output is a layer too: domain modules return values; only renderers and tasks show them to a person.

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
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import accelstack

PACKAGE = Path(accelstack.__file__).parent
README = PACKAGE.parent.parent / "README.md"

# The layers, bottom to top: a module imports only from its own layer or below. Each names the package's folders
# and modules in it (``__init__`` is the package's own). ``hostside`` is in none: host-side scripts are uploaded as
# files and imported by nothing here. The README's flow line says the same (a test below holds the two equal).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("__init__", "errors", "paths", "values", "yamlfile", "lazy"),
    ("results",),
    ("vendors",),
    ("inventory",),
    ("stacks",),
    ("transport",),
    ("facts",),
    ("provision",),
    ("validate",),
    ("engines",),
    ("history",),
    ("diagnose",),
    ("report",),
    ("flows",),
    ("tasks", "cli", "__main__"),
)
UNLAYERED = ("hostside",)
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


# ----- the import direction ---------------------------------------------------------------------------------

def layer_of(module: str) -> int | None:
    """The layer of a module of the package (``accelstack.engines.ssh.run`` -> engines'), None outside it."""
    parts = module.split(".")
    if parts[0] != "accelstack":
        return None
    head = parts[1] if len(parts) > 1 else "__init__"
    return next((index for index, names in enumerate(LAYERS) if head in names), None)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    """Whether a dotted name of the package is a module or package (not a name one of them defines)."""
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imported(tree: ast.AST, module: str, is_package: bool) -> Iterator[tuple[int, str]]:
    """Every module an import statement names (module level, in a function, under TYPE_CHECKING: each is a
    dependency), relative imports resolved, ``from x import y`` as ``x.y`` when ``y`` may be a module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            yield node.lineno, target
            yield from ((node.lineno, f"{target}.{alias.name}") for alias in node.names
                        if not node.module and is_module(f"{target}.{alias.name}"))


def back_edges(source: str, module: str, is_package: bool = False) -> list[str]:
    """Where ``source`` (the text of ``module``) imports from a layer above its own, or a module that is in no
    layer, as ``line: what``."""
    mine = layer_of(module)
    found = []
    for line, target in imported(ast.parse(source), module, is_package):
        if not target.startswith("accelstack") or target.split(".")[0] != "accelstack":
            continue
        theirs = layer_of(target)
        if theirs is None or mine is None or theirs > mine:
            where = "a module in no layer" if theirs is None or mine is None else LAYERS[theirs][0]
            found.append(f"{line}: {target} ({where})")
    return found


def test_the_check_sees_a_back_edge() -> None:
    assert back_edges("from ..flows.fleetcheck.run import fleet_check\n", "accelstack.report.html") == \
        ["1: accelstack.flows.fleetcheck.run (flows)"]
    assert back_edges("if TYPE_CHECKING:\n    from ..facts.model import Facts\n", "accelstack.stacks.components") == \
        ["2: accelstack.facts.model (facts)"]
    assert back_edges("def f():\n    import accelstack.engines.ssh.run\n", "accelstack.validate.judge") == \
        ["2: accelstack.engines.ssh.run (engines)"]
    assert back_edges("from . import checks\nfrom ..results.records import Record\n", "accelstack.validate",
                      is_package=True) == []
    assert back_edges("from .. import __version__\nfrom ..errors import ConfigError\n", "accelstack.results.records") == []
    assert back_edges("import accelstack.hostside.validators\n", "accelstack.facts.probe") == \
        ["1: accelstack.hostside.validators (a module in no layer)"]


def test_every_folder_and_module_of_the_package_is_in_one_layer() -> None:
    named = [name for names in LAYERS for name in names]
    assert len(named) == len(set(named)), "a name in two layers"
    present = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
               if (p.is_dir() and (p / "__init__.py").is_file()) or p.suffix == ".py"}
    assert present - set(named) - set(UNLAYERED) == set(), "place it in LAYERS (and the README's flow line)"


def test_no_module_imports_a_layer_above_its_own() -> None:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] in UNLAYERED:
            continue
        lines = back_edges(path.read_text(encoding="utf-8"), module_name(path), path.name == "__init__.py")
        if lines:
            found[relative.as_posix()] = lines
    assert found == {}, "an import runs up the layers (LAYERS, bottom to top): " + repr(found)


def test_nothing_imports_the_host_side_scripts_and_they_import_nothing_of_the_package() -> None:
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        targets = [target for _line, target in imported(tree, module_name(path), path.name == "__init__.py")]
        if relative.parts[0] == "hostside":
            assert not [t for t in targets if t.split(".")[0] == "accelstack"], relative
        else:
            assert not [t for t in targets if t.startswith("accelstack.hostside")], relative


README_LAYERS = re.compile(r"<!-- layers:begin[^>]*-->\n```\n(?P<line>.+?)\n```\n<!-- layers:end -->", re.DOTALL)


def test_the_readme_flow_line_is_the_layer_list() -> None:
    match = README_LAYERS.search(README.read_text(encoding="utf-8"))
    assert match, "README.md lost its <!-- layers:begin --> flow line"
    written = tuple(tuple(name.strip("/").removesuffix(".py") for name in group.split())
                    for group in " ".join(match.group("line").split()).split(" < "))
    assert written == LAYERS, "the README's flow line and LAYERS disagree"
