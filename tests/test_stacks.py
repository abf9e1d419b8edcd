"""Stack files: the shipped ones load and pass preflight; bad files fail with file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from accelstack.errors import ConfigError, StackError
from accelstack.paths import project_root
from accelstack.stacks import COMPONENTS, list_stacks, load_stack, preflight_stack, stack_names

SHIPPED = [
    "ascend-910b-cann8.0.rc2", "ascend-910b-cann8.0.0", "ascend-910b-cann8.1.rc1", "ascend-910b-cann8.2.rc1",
    "nvidia-cuda12.4", "nvidia-cuda12.8", "nvidia-cuda13.0", "amd-mi300x-rocm6.2", "cpu",
]


def test_every_required_stack_ships() -> None:
    assert sorted(SHIPPED) == stack_names()


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_stack_passes_preflight(name: str) -> None:
    stack = load_stack(name)
    assert stack.name == name
    assert set(stack.components) <= set(COMPONENTS)
    assert stack.paths["venv"] == "/opt/accelstack/venv"
    assert stack.paths["python"] == "/opt/accelstack/venv/bin/python"
    warnings = preflight_stack(stack)
    assert [w for w in warnings if w.severity == "error"] == []


def test_vendors_backends_and_pins() -> None:
    stacks = {stack.name: stack for stack in list_stacks()}
    cpu = stacks["cpu"]
    assert (cpu.vendor, cpu.backend) == ("cpu", "gloo")
    assert cpu.pins["torch"].version == "2.13.0+cpu" and cpu.pins["torch"].match == "release"
    assert cpu.pins["python"].match == "prefix"
    cann81 = stacks["ascend-910b-cann8.1.rc1"]
    assert (cann81.vendor, cann81.backend) == ("ascend", "hccl")
    assert cann81.components["cann_toolkit"] == "8.1.RC1"
    assert cann81.env["HCCL_CONNECT_TIMEOUT"] == "600"
    cuda13 = stacks["nvidia-cuda13.0"]
    assert (cuda13.vendor, cuda13.backend, cuda13.fields["nvidia_driver_branch"]) == ("nvidia", "nccl", "R580")
    assert cuda13.components["torch_cuda"] == "13.0"


def test_load_by_path_and_where() -> None:
    path = project_root() / "stacks" / "cpu.yml"
    stack = load_stack(str(path))
    assert stack.name == "cpu"
    assert stack.where("components.torch").startswith(f"{path}:")
    assert int(stack.where("components.torch").rsplit(":", 1)[1]) > 1


def test_unknown_stack_lists_the_shipped_ones() -> None:
    with pytest.raises(StackError) as info:
        load_stack("no-such-stack")
    assert "unknown stack" in str(info.value)
    assert "cpu" in str(info.value)
    assert isinstance(info.value, ConfigError) and info.value.exit_code == 3


GOOD = """\
name: {name}
vendor: cpu
backend: gloo
description: test
components:
  python: "3.11"
  torch: "2.13.0"
paths:
  venv: /opt/accelstack/venv
  python: /opt/accelstack/venv/bin/python
devices: [cpu]
"""


def _write(tmp_path: Path, text: str, name: str = "t") -> Path:
    path = tmp_path / f"{name}.yml"
    path.write_text(text.replace("{name}", name))
    return path


def test_good_file_loads(tmp_path: Path) -> None:
    assert load_stack(_write(tmp_path, GOOD)).components == {"python": "3.11", "torch": "2.13.0"}


@pytest.mark.parametrize("change,line,words", [
    (("  torch: \"2.13.0\"", "  torhc: \"2.13.0\""), 7, "unknown component key 'torhc'"),
    (("  python: \"3.11\"", "  python: 3.10"), 6, "quoted string"),
    (("description: test\n", ""), 1, "missing required field(s): description"),
    (("  torch: \"2.13.0\"", "  torch: \"2.13.0\"\n  torch_npu: \"2.1.0\""), 8, "does not apply to a cpu stack"),
    (("backend: gloo", "backend: nccl"), 3, "does not fit vendor"),
    (("devices: [cpu]", "devices: [cpu]\ncolour: blue"), 12, "unknown field 'colour'"),
    (("  torch: \"2.13.0\"", "  torch: \"2.13.0\"\n  torch: \"2.12.0\""), 8, "duplicate key 'torch'"),
    (("  torch: \"2.13.0\"", "  torch: {version: \"2.13.0\", match: fuzzy}"), 7, "match"),
    (("  torch: \"2.13.0\"", "  torch: \"two\""), 7, "not a version"),
    (("devices: [cpu]", "devices: [cpu"), 12, "invalid YAML"),
    (("  venv: /opt/accelstack/venv\n", ""), 8, "paths: missing venv"),
])
def test_bad_file_names_file_and_line(tmp_path: Path, change: tuple[str, str], line: int, words: str) -> None:
    text = GOOD.replace(*change)
    path = _write(tmp_path, text)
    with pytest.raises(StackError) as info:
        load_stack(path)
    message = str(info.value)
    assert words in message
    assert f"{path}:{line}" in message, message


def test_name_must_match_file(tmp_path: Path) -> None:
    path = tmp_path / "other.yml"
    path.write_text(GOOD.replace("{name}", "t"))
    with pytest.raises(StackError, match="differs from the file name"):
        load_stack(path)


def test_nvidia_stack_needs_branch(tmp_path: Path) -> None:
    text = (project_root() / "stacks" / "nvidia-cuda12.8.yml").read_text()
    text = text.replace("name: nvidia-cuda12.8", "name: t").replace("nvidia_driver_branch: R580\n", "")
    with pytest.raises(StackError, match="nvidia_driver_branch"):
        load_stack(_write(tmp_path, text))


# ----- the vocabulary: one table, the README's, the roles' -----

def test_the_readme_table_of_components_is_the_table_everything_reads() -> None:
    from accelstack.stacks.components import readme_table

    text = (project_root() / "README.md").read_text(encoding="utf-8")
    begin, end = text.index("<!-- components:begin"), text.index("<!-- components:end -->")
    table = text[text.index("\n", begin) + 1:end]
    assert table == readme_table(), (
        "README.md's table of components is stale: paste accelstack.stacks.components.readme_table() between the "
        "components markers")


def test_every_component_is_installed_by_the_role_the_table_names() -> None:
    from accelstack.provision.roles import load_roles
    from accelstack.stacks.components import SPECS, WITH_TORCH

    roles = load_roles()
    installers = {step.spec["component"]: role.name for role in roles.values() for step in role.steps
                  if step.kind == "installer"}
    pip = {role.name for role in roles.values() for step in role.steps if step.kind == "pip"}
    assert set(installers) <= set(COMPONENTS)
    for key, spec in SPECS.items():
        role = spec.installed_by.split(" ")[0]
        assert role in roles, (key, role)
        if role in pip:
            # The venv's python, its packages, and what comes with the torch wheel.
            assert key in {"python", "torch", "torch_npu"} | WITH_TORCH, key
        else:
            assert installers.get(key) == role, (key, installers.get(key), role)


def test_nccl_and_the_system_nccl_are_two_components() -> None:
    from accelstack.stacks.components import SPECS

    for name in ("nvidia-cuda12.4", "nvidia-cuda12.8", "nvidia-cuda13.0"):
        stack = load_stack(name)
        # The shipped NVIDIA stacks also want a system NCCL (nccl-tests), at the release of torch's own.
        assert stack.pins["system_nccl"].version == stack.pins["nccl"].version
        assert stack.pins["system_nccl"].match == stack.pins["nccl"].match == "release"
    assert "torch loads" in SPECS["nccl"].copy and "system" in SPECS["system_nccl"].copy
    assert "nvidia" not in SPECS["system_nccl"].required  # optional: a stack without it gets no system NCCL


def test_a_system_nccl_on_a_stack_that_is_not_nvidia_is_refused(tmp_path: Path) -> None:
    text = (project_root() / "stacks" / "cpu.yml").read_text().replace("name: cpu", "name: mine")
    path = tmp_path / "mine.yml"
    path.write_text(text.replace('  python: "3.11"', '  python: "3.11"\n  system_nccl: "2.28.9"'))
    with pytest.raises(StackError, match="component 'system_nccl' does not apply to a cpu stack"):
        load_stack(path)
