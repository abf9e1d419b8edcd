"""A vendor is a plugin found by name (``accelstack.vendors``): the rest of the package asks it, never compares its
name. Held here by a walk of every module outside ``vendors/`` (the lab and the tests are exempt):

- no string literal that is a vendor's name (``nvidia``, ``ascend``, ``huawei``, ``amd``) anywhere: code that names
  one vendor is that vendor's code, and belongs in its folder;
- ``cpu`` (also torch's CPU device type) is refused where it stands for the vendor: compared with something that
  reads a vendor (``vendor``, ``.vendor``, ``config["vendor"]``, ``config.get("vendor")``);
- no list of vendors: a tuple, list, set or mapping that holds two vendors' names (``vendors()`` is the one list).

And the registry: every vendor folder is a vendor, its attributes are consistent, its data files parse.
"""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest
import yaml

import accelstack
from accelstack.vendors import Vendor, get_vendor, vendor_names, vendor_of_pci, vendors

PACKAGE = Path(accelstack.__file__).parent
EXEMPT_FOLDERS = ("vendors", "lab")
# Names of vendors as a literal may carry them: the registry's, the PCI vendor Ascend's devices report, and the
# vendor the next folder adds.
WORDS = frozenset(vendor_names()) | {"huawei", "amd"}
NAMED = WORDS - {"cpu"}


def _literal(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _reads_vendor(node: ast.AST) -> bool:
    """Whether an expression reads a vendor: a name or attribute ``vendor``, or a key ``"vendor"``."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id == "vendor":
            return True
        if isinstance(sub, ast.Attribute) and sub.attr == "vendor":
            return True
        if _literal(sub) == "vendor":
            return True
    return False


def _members(node: ast.AST) -> list[str]:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [text for text in map(_literal, node.elts) if text is not None]
    if isinstance(node, ast.Dict):
        return [text for text in map(_literal, [k for k in node.keys if k is not None]) if text is not None]
    return []


def vendor_names_in(tree: ast.AST) -> list[str]:
    """Where a module names a vendor, compares ``cpu`` with a vendor or keeps a list of vendors, as ``line: what``."""
    found = []
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and _literal(node.body[0].value) is not None}
    for node in ast.walk(tree):
        text = _literal(node)
        if text in NAMED and id(node) not in docstrings:
            found.append(f"{node.lineno}: the literal {text!r}")  # type: ignore[attr-defined]
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_reads_vendor(side) for side in sides):
                for side in sides:
                    words = [_literal(side)] + _members(side)
                    if any(word in WORDS for word in words if word):
                        found.append(f"{node.lineno}: a vendor compared with {ast.unparse(side)}")
        if sum(1 for word in set(_members(node)) if word in WORDS) >= 2:
            found.append(f"{node.lineno}: a list of vendors {ast.unparse(node)[:60]}")  # type: ignore[attr-defined]
        if isinstance(node, ast.MatchValue) and _literal(node.value) in WORDS:
            found.append(f"{node.lineno}: a match on the vendor {_literal(node.value)!r}")
    return sorted(set(found), key=lambda item: (int(item.split(":")[0]), item))


def test_the_check_finds_vendor_names_comparisons_and_lists() -> None:
    source = ('"""The nvidia docstring."""\n'
              'if vendor == "nvidia": pass\n'
              'ok = config.get("vendor") != "cpu"\n'
              'kind = "cuda" if vendor == "ascend" else "cpu"\n'
              'TABLE = {"ascend": 1, "cpu": 2}\n'
              'SKIP = stack.vendor in ("cpu",)\n'
              'device = torch.device("cpu") if kind == "cpu" else None\n'
              'tool = "nvidia-smi"\n')
    assert vendor_names_in(ast.parse(source)) == [
        "2: a vendor compared with 'nvidia'", "2: the literal 'nvidia'", "3: a vendor compared with 'cpu'",
        "4: a vendor compared with 'ascend'", "4: the literal 'ascend'", "5: a list of vendors {'ascend': 1, 'cpu': 2}",
        "5: the literal 'ascend'", "6: a vendor compared with ('cpu',)"]
    # torch's cpu device, a tool's name, the vendor's name in a docstring: none of them names the vendor in code.
    assert vendor_names_in(ast.parse('x = torch.device("cpu") if kind == "cpu" else "nvidia-smi"\n')) == []


# What is left to move into vendors/ while the work of issue 23 goes on, by module: it shrinks to nothing.
PENDING: tuple[str, ...] = ()


def test_no_module_outside_vendors_names_a_vendor() -> None:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] in EXEMPT_FOLDERS:
            continue
        lines = vendor_names_in(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        if lines and relative.as_posix() not in PENDING:
            found[relative.as_posix()] = lines
    assert found == {}, "ask the vendor (accelstack.vendors: get_vendor(name)) instead: " + repr(found)


# Templates and role steps are code too (jinja expressions and ``when:`` conditions): none compares the vendor with
# a name. A vendor's part of a shared file is its own template (``vendors/<name>/templates/``, included by name);
# what a step needs to know of a vendor is one of its attributes in the context (``vendor_rank_table``).
JINJA_VENDOR = re.compile(r"""\bvendor\s*(?:==|!=|\bin\b|\bnot\s+in\b)\s*[\[(]?\s*["']""")


def jinja_vendor_comparisons(text: str) -> list[int]:
    return [number for number, line in enumerate(text.splitlines(), 1) if JINJA_VENDOR.search(line)]


def test_the_template_check_finds_a_vendor_compared_with_a_name() -> None:
    assert jinja_vendor_comparisons('{% if vendor == "ascend" %}\nx\n  when: vendor != \'cpu\'\n'
                                    '  when: vendor in ["nvidia", "amd"]\n') == [1, 3, 4]
    assert jinja_vendor_comparisons('{% include "vendors/" ~ vendor ~ "/env.sh.j2" ignore missing %}\n'
                                    '  when: vendor_rank_table\n') == []


def test_no_shared_template_or_role_compares_the_vendor_with_a_name() -> None:
    root = PACKAGE.parent.parent
    files = [*sorted((root / "templates").rglob("*")), *sorted((root / "roles").rglob("*")),
             *sorted((PACKAGE / "provision").rglob("*.j2"))]
    found = {str(path.relative_to(root)): lines for path in files if path.is_file()
             for lines in [jinja_vendor_comparisons(path.read_text(encoding="utf-8"))] if lines}
    assert found == {}, "put the vendor's part in vendors/<name>/templates/ or ask one of its attributes: " + repr(found)


def test_the_facts_probe_names_no_vendor_and_carries_each_vendors_part() -> None:
    # The shell script names no vendor's tool, PCI id or tool folder; each vendor's probe.sh, ids and folders are
    # put in by accelstack.facts.probe, so a new vendor's probe is a file in its folder.
    from accelstack.facts.probe import PROBE_SCRIPT, _hostside_text
    from accelstack.paths import hostside

    base = hostside("probes", PROBE_SCRIPT).read_text(encoding="utf-8")
    code = "\n".join(line for line in base.splitlines() if not line.lstrip().startswith("#"))
    for vendor in vendors():
        named = [w for w in (vendor.tool, *vendor.pci_vendor_ids, *vendor.tool_dirs) if w and w.lower() in code.lower()]
        assert named == [], f"facts_probe.sh names {vendor.name}'s {named}: put it in vendors/{vendor.name}/"
    sent = _hostside_text(PROBE_SCRIPT)
    assert "@vendor-" not in "\n".join(line for line in sent.splitlines() if not line.lstrip().startswith("#"))
    extra = next(line for line in sent.splitlines() if line.startswith("EXTRA_DIRS="))
    for vendor in vendors():
        part = vendor.data("probe.sh")
        if part.is_file():
            assert part.read_text(encoding="utf-8") in sent
        for pci in vendor.pci_vendor_ids:
            assert any(pci in line and f"SEEN_{vendor.name}=yes" in line for line in sent.splitlines())
        assert all(f":{folder}" in extra for folder in vendor.tool_dirs)
        assert f"SEEN_{vendor.name}=" in sent


# ----- the registry -----------------------------------------------------------------------------------------------


def test_every_vendor_folder_is_a_vendor_found_by_its_name() -> None:
    folders = sorted(p.name for p in (PACKAGE / "vendors").iterdir()
                     if p.is_dir() and (p / "__init__.py").is_file())
    assert sorted(vendor_names()) == folders
    for name in folders:
        vendor = get_vendor(name)
        assert isinstance(vendor, Vendor) and vendor.name == name and vendor.label and vendor.backend
        assert vendor.folder == PACKAGE / "vendors" / name


def test_an_unknown_vendor_is_one_clear_error_naming_the_known_ones() -> None:
    from accelstack.errors import ConfigError

    with pytest.raises(ConfigError, match=f"vendor 'huawei' is not one of {', '.join(vendor_names())}$"):
        get_vendor("huawei")
    with pytest.raises(ConfigError):
        get_vendor(None)


def test_each_vendor_says_what_it_is_consistently() -> None:
    for vendor in vendors():
        if vendor.has_devices:
            assert vendor.torch_device and vendor.tool and vendor.pci_vendor_ids and vendor.visible_devices_env
            assert vendor.socket_ifname_env and vendor.socket_ifname_env.endswith("_SOCKET_IFNAME")
        else:
            assert vendor.torch_device is None and not vendor.pci_vendor_ids and not vendor.components()
        for pci in vendor.pci_vendor_ids:
            assert vendor_of_pci(pci.upper()) == vendor.name
        keys = [c.key for c in vendor.components()]
        assert len(keys) == len(set(keys))
        for component in vendor.components():
            assert component.vendors == frozenset({vendor.name})
            assert component.required <= component.vendors and component.critical <= component.vendors
    assert vendor_of_pci("0x8086") is None


# ----- data a vendor ships in its folder, and the project's files that win over it ---------------------------------


@pytest.fixture()
def nvidia_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The nvidia vendor's folder moved to a temporary one (its data files only), to plant files in."""
    folder = tmp_path / "vendor"
    folder.mkdir()
    monkeypatch.setattr(type(get_vendor("nvidia")), "folder", property(lambda self: folder))
    return folder


def test_a_vendors_own_compat_rows_count_unless_the_project_has_its_file(tmp_path: Path, nvidia_folder: Path) -> None:
    from accelstack.paths import project_root
    from accelstack.stacks.compat import load_matrix, matrix_files

    root = tmp_path / "project"
    (root / "compat").mkdir(parents=True)
    shutil.copy(project_root() / "compat" / "ascend.yml", root / "compat" / "ascend.yml")
    # Every other vendor's own rows (AMD ships its compat.yml in its folder) come after the project's files.
    others = [path for v in vendors() if v.name != "nvidia" and (path := v.compat_file(root)) is not None
              and path.parent != root / "compat"]
    assert matrix_files(root) == [root / "compat" / "ascend.yml", *others]
    assert not load_matrix(root).table("cuda_driver")
    shipped = (project_root() / "compat" / "nvidia.yml").read_text()
    (nvidia_folder / "compat.yml").write_text(shipped)
    assert sorted(matrix_files(root)) == sorted([root / "compat" / "ascend.yml", nvidia_folder / "compat.yml",
                                                 *others])
    assert load_matrix(root).table("cuda_driver")  # the vendor's rows are read
    # A site's compat/nvidia.yml replaces the vendor's rows: an operator adds rows there.
    (root / "compat" / "nvidia.yml").write_text(shipped.replace('{cuda: "12.0", driver: 525.60.13,',
                                                                '{cuda: "12.0", driver: 525.99.99,'))
    assert nvidia_folder / "compat.yml" not in matrix_files(root)
    assert {r.driver for r in load_matrix(root).table("cuda_driver") if r.toolkit == "12.0"} == {"525.99.99"}


def test_a_vendors_own_roles_are_found_unless_the_project_has_one_of_that_name(tmp_path: Path,
                                                                               nvidia_folder: Path) -> None:
    from accelstack.errors import ConfigError
    from accelstack.provision.roles import load_roles, select_roles

    root = tmp_path / "project"
    (root / "roles" / "env").mkdir(parents=True)
    (root / "roles" / "env" / "meta.yml").write_text("vendors: [any]\n")
    (nvidia_folder / "roles" / "gpu_driver").mkdir(parents=True)
    (nvidia_folder / "roles" / "gpu_driver" / "meta.yml").write_text("vendors: [nvidia]\n")
    roles = load_roles(root)
    assert roles["gpu_driver"].path == nvidia_folder / "roles" / "gpu_driver" and "env" in roles
    assert [r.name for r in select_roles(roles, "nvidia")] == ["env", "gpu_driver"]
    assert [r.name for r in select_roles(roles, "ascend")] == ["env"]
    (root / "roles" / "gpu_driver").mkdir()
    (root / "roles" / "gpu_driver" / "meta.yml").write_text("vendors: [nvidia]\n")
    assert load_roles(root)["gpu_driver"].path == root / "roles" / "gpu_driver"  # the site's copy wins
    (root / "roles" / "gpu_driver" / "meta.yml").write_text("vendors: [huawei]\n")
    with pytest.raises(ConfigError, match=f"vendors: 'huawei' is not one of {', '.join(vendor_names())}, any"):
        load_roles(root)


def test_each_vendors_host_side_half_says_what_its_vendor_says() -> None:
    """The host-side module cannot import the package (it runs on the host's python), so it states its vendor's
    facts again; here both halves are held equal, so neither drifts unseen."""
    from .helpers import load_vendor_hostside

    for vendor in vendors():
        host = load_vendor_hostside(vendor.name)
        assert (host.NAME, host.HAS_DEVICES, host.TORCH_DEVICE, host.TORCH_PLUGIN, host.TORCH_BUILD, host.TOOL) == (
            vendor.name, vendor.has_devices, vendor.torch_device, vendor.torch_plugin, vendor.torch_build,
            vendor.tool), vendor.name
        assert tuple(host.VISIBLE_DEVICES) == vendor.visible_devices_env, vendor.name
        assert {pci for pci, _class in host.PCI_ACCELERATORS} == set(vendor.pci_vendor_ids), vendor.name
        assert {klass for _pci, klass in host.PCI_ACCELERATORS} == set(vendor.pci_classes), vendor.name
        assert host.DEVICE_IPS == vendor.device_ips, vendor.name
        floors = vendor.floors_file()
        shipped = (yaml.safe_load(floors.read_text()).get("device_health") or {}) if floors else {}
        # The defaults a host falls back on are the limits the vendor ships.
        assert {k: v for k, v in host.LIMITS.items() if k in shipped} == {k: v for k, v in shipped.items()
                                                                           if k in host.LIMITS}, vendor.name
