"""The planner on hand-built facts: pure, no host. Fresh hosts get every step in role order, converged hosts
get none, and bad settings stop a host before it is touched."""

from __future__ import annotations

from pathlib import Path

import pytest

from accelstack.errors import ConfigError
from accelstack.facts import Address, Facts, Interface, TorchFacts
from accelstack.inventory import Host
from accelstack.paths import project_root
from accelstack.provision.apply import STATE_SEPARATOR, probe_and_state_command
from accelstack.provision.artifacts import Artifact, parse_manifest
from accelstack.provision.plan import ClusterMember, HostPlan, Planner, cluster_context
from accelstack.provision.roles import load_role, load_roles, select_roles
from accelstack.provision.state import RemoteState, StateQuery, parse_state, state_command
from accelstack.provision.steps import HostView
from accelstack.provision.templating import sha256_text
from accelstack.stacks.context import resolve_contexts
from accelstack.vendors.ascend.facts import AscendFacts, NpuChip
from accelstack.vendors.ascend.parsers import parse_hccn_conf

ASCEND_STACK = "ascend-910b-cann8.1.rc1"


def art(component: str, version: str, file: str, size: int = 100) -> Artifact:
    return Artifact(file=file, sha256=(component + version).encode().hex().ljust(64, "0")[:64], size=size,
                    component=component, version=version)


ARTIFACTS = [
    art("torch", "2.13.0+cpu", "wheels/torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl", 1000),
    art("python-dep", "1.14.0", "wheels/deps/sympy-1.14.0-py3-none-any.whl", 10),
    art("torch", "2.5.1", "wheels/torch-2.5.1-cp311-cp311-linux_x86_64.whl", 900),
    art("torch_npu", "2.5.1", "wheels/torch_npu-2.5.1-cp311-cp311-linux_x86_64.whl", 90),
    art("ascend_driver", "24.1.rc2", "Ascend-hdk-910b-npu-driver_24.1.rc2_linux-x86-64.run", 500),
    art("ascend_firmware", "7.3.0.1.231", "Ascend-hdk-910b-npu-firmware_7.3.0.1.231.run", 300),
    art("cann_toolkit", "8.1.RC1", "Ascend-cann-toolkit_8.1.RC1_linux-x86_64.run", 700),
    art("cann_kernels", "8.1.RC1", "Ascend-cann-kernels-910b_8.1.RC1_linux-x86_64.run", 600),
    art("nnal", "8.1.RC1", "Ascend-cann-nnal_8.1.RC1_linux-x86_64.run", 200),
]


def host(name: str = "node1", stack: str = "cpu", **extra: object) -> Host:
    return Host(name=name, address=f"10.0.0.{name[-1]}", vars={"stack": stack, **extra})


def facts(*, torch: str | None = None, torch_npu: str | None = None, python: str | None = None,
          ascend: AscendFacts | None = None, nics: tuple[str, ...] = ("lo", "eth0")) -> Facts:
    return Facts(hostname="node1", stack_python_version=python,
                 interfaces=[Interface(n, up=True, addresses=[Address("inet", "10.0.0.1", 16)]) for n in nics],
                 torch=TorchFacts(version=torch, torch_npu=torch_npu) if torch else None,
                 vendor_facts={"ascend": ascend} if ascend is not None else {})


def plan_for(h: Host, f: Facts, state: RemoteState | None = None,
             artifacts: list[Artifact] | None = None, repo: str | None = "/srv/repo") -> tuple[HostPlan, Planner, HostView]:
    roles = load_roles()
    defaults: dict[str, object] = {}
    for role in roles.values():
        defaults.update(role.defaults)
    ctx = resolve_contexts([h], role_defaults=defaults, run_preflight=False)[h.name]
    planner = Planner(select_roles(roles, ctx.stack.vendor))
    state = state or RemoteState()
    cluster = cluster_context([ClusterMember(h.name, h.address, ctx.stack.vendor, f, state, ctx.vars)])
    view = HostView(h.name, f, state, ctx.stack, ctx.vars, ARTIFACTS if artifacts is None else artifacts,
                    cluster[h.name], repo=repo)
    return planner.plan_host(view), planner, view


def converge(plan: HostPlan, view: HostView) -> RemoteState:
    """The remote state after the plan was applied: its files written, its uploads in place."""
    state = RemoteState(checksums=dict(view.state.checksums), users=set(view.state.users),
                        groups=set(view.state.groups), device_ips=dict(view.state.device_ips))
    for change in plan.changes:
        for write in change.writes:
            state.checksums[write.path] = sha256_text(write.content)
        for upload in change.uploads:
            state.checksums[upload.remote] = upload.artifact.sha256
    return state


def test_fresh_cpu_host_gets_venv_then_env_files() -> None:
    plan, _, _ = plan_for(host(), facts())
    assert [c.step for c in plan.changes] == ["python_env.venv", "env.env-file", "env.hostfile", "env.launcher",
                                                "env.node-file"]
    venv = plan.changes[0]
    assert "torch: absent -> 2.13.0+cpu" in venv.summary
    # The pinned wheel and the dependency wheels travel; the other stack's torch does not.
    assert sorted(u.artifact.name for u in venv.uploads) == [
        "sympy-1.14.0-py3-none-any.whl", "torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl"]
    assert "--no-index" in venv.commands[1] and venv.commands[1].endswith(" torch==2.13.0+cpu")
    assert plan.bytes_to_transfer >= 1010
    assert plan.reboot == "no"


def test_converged_cpu_host_has_no_change_and_nothing_to_transfer() -> None:
    first, _, view = plan_for(host(), facts())
    state = converge(first, view)
    plan, _, _ = plan_for(host(), facts(torch="2.13.0+cpu", python="3.11.2"), state)
    assert plan.changes == [] and plan.problems == []
    assert plan.bytes_to_transfer == 0


def test_uploaded_wheel_is_not_sent_again_when_only_the_install_is_missing() -> None:
    first, _, view = plan_for(host(), facts())
    state = converge(first, view)
    plan, _, _ = plan_for(host(), facts(python="3.11.2"), state)
    assert [c.step for c in plan.changes] == ["python_env.venv"]
    assert plan.bytes_to_transfer == 0


def test_fresh_ascend_host_installs_driver_before_firmware_then_cann() -> None:
    h = host(stack=ASCEND_STACK)
    plan, _, _ = plan_for(h, facts(ascend=AscendFacts()))
    steps = [c.step for c in plan.changes]
    assert steps[:8] == ["ascend_driver.packages", "ascend_driver.run-user", "ascend_driver.driver",
                         "ascend_driver.firmware", "cann.toolkit", "cann.kernels", "cann.nnal", "python_env.venv"]
    assert "env.rank-table" in steps
    driver = plan.changes[2]
    assert "--full" in driver.commands[0] and "--install-username=HwHiAiUser" in driver.commands[0]
    kernels = plan.changes[5]
    assert kernels.commands[0].startswith("chmod 0700") and ". /usr/local/Ascend/ascend-toolkit/set_env.sh" in \
        kernels.commands[0]
    assert plan.reboot == "yes"  # the firmware notifies the reboot handler


def test_ascend_upgrade_installs_firmware_before_driver() -> None:
    h = host(stack=ASCEND_STACK, ascend_driver_packages=[])
    old = AscendFacts(driver="24.1.rc1", firmware="7.1.0.6.220", cann_toolkit="8.1.RC1", cann_kernels="8.1.RC1",
                      nnal="8.1.RC1")
    plan, _, _ = plan_for(h, facts(ascend=old, torch="2.5.1", torch_npu="2.5.1", python="3.11.9"),
                          RemoteState(users={"HwHiAiUser"}, groups={"HwHiAiUser"}))
    installers = [c for c in plan.changes if c.kind == "installer"]
    assert [c.step for c in installers] == ["ascend_driver.firmware-upgrade", "ascend_driver.driver"]
    assert "--upgrade" in installers[0].commands[0] and "--upgrade" in installers[1].commands[0]
    assert installers[0].summary == "ascend_firmware: 7.1.0.6.220 -> 7.3.0.1.231"


def test_interface_missing_on_the_host_is_a_problem_before_anything_is_planned() -> None:
    plan, _, _ = plan_for(host(gloo_socket_ifname="ib0"), facts(nics=("lo", "eth0")))
    assert plan.changes == []
    assert len(plan.problems) == 1 and "ib0" in plan.problems[0] and "eth0" in plan.problems[0]


@pytest.mark.parametrize("value", ["eth", "=eth0", "^docker", "eth0,lo"])
def test_interface_syntax_of_nccl_is_understood(value: str) -> None:
    plan, _, _ = plan_for(host(nccl_socket_ifname=value), facts())
    assert plan.problems == []


def test_visible_devices_beyond_the_host_are_refused() -> None:
    npus = AscendFacts(npus=[NpuChip(npu_id=i) for i in range(2)])
    plan, _, _ = plan_for(host(stack=ASCEND_STACK, visible_devices="0,1,2"), facts(ascend=npus))
    assert plan.problems and "2 device(s)" in plan.problems[0]


def test_no_artifact_for_a_pin_is_a_problem_for_that_host() -> None:
    plan, _, _ = plan_for(host(), facts(), artifacts=[])
    assert plan.changes == [] and "/srv/repo has no torch 2.13.0+cpu (wheel)" in plan.problems[0]


def test_no_repository_configured_says_so() -> None:
    plan, _, _ = plan_for(host(), facts(), artifacts=[], repo=None)
    assert plan.changes == [] and len(plan.problems) == 1
    assert "torch 2.13.0+cpu (wheel) must be installed from an artifact repository, and none is configured" \
        in plan.problems[0]


def test_a_missing_artifact_is_no_problem_for_a_step_at_its_pin() -> None:
    # torch already at its pin: the plan has template changes, and no artifact is needed for them.
    plan, _, _ = plan_for(host(), facts(torch="2.13.0+cpu", python="3.11.7"), artifacts=[], repo=None)
    assert plan.problems == [] and plan.changes
    assert all(not change.uploads for change in plan.changes)


def test_env_file_holds_collective_settings_quoted_and_checksums_drive_the_write() -> None:
    h = host(gloo_socket_ifname="eth0", nccl_ib_disable=True)
    plan, _, view = plan_for(h, facts())
    env = next(c for c in plan.changes if c.step == "env.env-file")
    content = env.writes[0].content
    assert "export GLOO_SOCKET_IFNAME=eth0\n" in content and "export NCCL_IB_DISABLE=1\n" in content
    assert env.writes[0].mode == 0o644 and env.writes[0].path == "/etc/profile.d/accelstack.sh"
    state = converge(plan, view)
    again, _, _ = plan_for(h, facts(torch="2.13.0+cpu", python="3.11.2"), state)
    assert again.changes == []
    changed, _, _ = plan_for(host(gloo_socket_ifname="lo"), facts(torch="2.13.0+cpu", python="3.11.2"), state)
    assert [c.step for c in changed.changes] == ["env.env-file", "env.node-file"]


def test_ascend_env_file_sources_set_env_and_adds_the_driver_libraries() -> None:
    plan, _, _ = plan_for(host(stack=ASCEND_STACK), facts(ascend=AscendFacts()))
    content = next(c for c in plan.changes if c.step == "env.env-file").writes[0].content
    assert ". /usr/local/Ascend/ascend-toolkit/set_env.sh" in content
    assert "/usr/local/Ascend/driver/lib64/driver:/usr/local/Ascend/driver/lib64/common" in content
    assert "--cxx_abi=1" in content  # NNAL is pinned by this stack
    assert "export HCCL_CONNECT_TIMEOUT=600" in content  # from the stack's env


def test_each_vendor_writes_its_own_part_of_the_env_file_and_only_ascend_a_rank_table() -> None:
    # The shared template includes vendors/<vendor>/templates/env.sh.j2; no shared template names a vendor.
    from accelstack.vendors.amd.facts import AmdFacts

    at_pin = {  # the AMD host has its driver, ROCm and torch: the plan has only the env role's files to write
        "amd-mi300x-rocm6.2": Facts(hostname="node1", stack_python_version="3.11.9",
                                    interfaces=facts().interfaces, torch=TorchFacts(version="2.5.1+rocm6.2", hip="6.2"),
                                    vendor_facts={"amd": AmdFacts(driver_version="6.8.5", rocm="6.2.2")}),
        ASCEND_STACK: facts(ascend=AscendFacts()), "cpu": facts()}
    steps = {}
    for stack, host_facts in at_pin.items():
        plan, _, _ = plan_for(host(stack=stack), host_facts)
        steps[stack] = {c.step: c.writes[0].content for c in plan.changes if c.step.startswith("env.") and c.writes}
    amd = steps["amd-mi300x-rocm6.2"]["env.env-file"]
    assert "export PATH=/opt/rocm/bin${PATH:+:$PATH}" in amd and "export ROCM_PATH=/opt/rocm" in amd
    assert "CUDA_HOME" not in amd and "set_env.sh" not in amd
    assert "CUDA_HOME" not in steps["cpu"]["env.env-file"] and "PATH" not in steps["cpu"]["env.env-file"]
    assert "env.rank-table" in steps[ASCEND_STACK]
    assert "env.rank-table" not in steps["amd-mi300x-rocm6.2"] and "env.rank-table" not in steps["cpu"]


def test_rank_table_v1_from_hccn_device_ips() -> None:
    npus = [NpuChip(npu_id=i) for i in range(2)]
    members = [ClusterMember(f"n{i}", f"10.0.0.{i}", "ascend", facts(ascend=AscendFacts(npus=npus)),
                             RemoteState(device_ips={0: f"192.168.{i}.8", 1: f"192.168.{i}.9"}), {})
               for i in (1, 2)]
    table = cluster_context(members)["n2"]["rank_table"]
    assert table["version"] == "1.0" and table["server_count"] == "2" and table["status"] == "completed"
    assert table["server_list"][1] == {"server_id": "10.0.0.2", "device": [
        {"device_id": "0", "device_ip": "192.168.2.8", "rank_id": "2"},
        {"device_id": "1", "device_ip": "192.168.2.9", "rank_id": "3"}]}
    assert cluster_context(members)["n2"]["node_rank"] == 1


def test_state_command_and_parser_agree() -> None:
    query = StateQuery(checksums={"/opt/a b"}, users={"HwHiAiUser"}, npu_count=2)
    command = state_command(query)
    assert "'/opt/a b'" in command and "for i in 0 1;" in command
    text = "\n".join(["@@accelstack-state sha", "a" * 64 + "  /opt/a b", "@@accelstack-state exists",
                      "@@accelstack-state users", "HwHiAiUser", "@@accelstack-state groups",
                      "@@accelstack-state packages", "@@accelstack-state unless", "@@accelstack-state reboot",
                      "ascend_driver.firmware", "@@accelstack-state hccn 0", "ipaddr:10.10.0.10",
                      "netmask:255.255.255.0", "@@accelstack-state hccn 1"])
    state = parse_state(text)
    assert state.checksums == {"/opt/a b": "a" * 64}
    assert state.users == {"HwHiAiUser"} and state.reboot_marker == "ascend_driver.firmware"
    assert state.device_ips == {0: "10.10.0.10", 1: None}


def test_device_ips_from_hccn_conf_and_the_tool_only_for_devices_it_lacks() -> None:
    conf = "address_0=192.168.100.1\nnetmask_0=255.255.255.0\nnetdetect_0=192.168.100.254\naddress_1 = 192.168.101.1\n" \
           "address_10=192.168.110.1\naddress_2=\nbogus\n"
    assert parse_hccn_conf(conf) == {0: "192.168.100.1", 1: "192.168.101.1", 10: "192.168.110.1"}
    command = state_command(StateQuery(npu_count=3))
    assert "cat /etc/hccn.conf" in command and "address_$i[[:space:]]*=" in command and "-ip -g" in command
    # The tool answered for device 2 only (the file lists 0 and 1); where both speak, the file wins.
    text = "\n".join(["@@accelstack-state reboot", "@@accelstack-state hccn.conf", *conf.splitlines(),
                      "@@accelstack-state hccn 2", "ipaddr:10.0.0.2", "netmask:255.255.255.0",
                      "@@accelstack-state hccn 1", "ipaddr:10.9.9.9"])
    assert parse_state(text).device_ips == {0: "192.168.100.1", 1: "192.168.101.1", 2: "10.0.0.2",
                                            10: "192.168.110.1"}
    # Before the facts: hccn.conf only, no tool at all.
    early = state_command(StateQuery(hccn_conf=True))
    assert "cat /etc/hccn.conf" in early and "hccn_tool" not in early


def test_top_up_asks_only_what_the_facts_added() -> None:
    asked = StateQuery(checksums={"/a"}, users={"u"}, unless={"s": "test -e /x"}, hccn_conf=True)
    state = RemoteState(checksums={"/a": "0" * 64}, users={"u"}, unless_ok={"s"}, device_ips={0: "1.1.1.1"},
                        reboot_marker="driver")
    assert StateQuery(checksums={"/a"}, users={"u"}, npu_count=1).missing(asked, state) is None
    wanted = StateQuery(checksums={"/a", "/b"}, users={"u"}, unless={"s": "test -e /y"}, npu_count=3)
    rest = wanted.missing(asked, state)
    assert rest is not None and rest.checksums == {"/b"} and not rest.users and rest.devices == [1, 2]
    assert rest.unless == {"s": "test -e /y"}
    command = state_command(rest)
    assert "for i in 1 2;" in command and "sha256sum -- /b 2>" in command
    state.merge(parse_state("@@accelstack-state unless\n@@accelstack-state hccn 1\nipaddr:1.1.1.2\n"
                            "@@accelstack-state hccn 2\n"), rest)
    # The re-asked unless is decided by its new answer; device 2 answered "not configured".
    assert state.unless_ok == set() and state.device_ips == {0: "1.1.1.1", 1: "1.1.1.2", 2: None}
    assert state.reboot_marker == "driver" and state.checksums == {"/a": "0" * 64}


def test_probe_and_state_share_one_round_trip() -> None:
    from accelstack.facts import ProbeOptions
    command = probe_and_state_command(ProbeOptions(), StateQuery(checksums={"/etc/x"}, hccn_conf=True))
    probe_at, sep_at, state_at = command.index("/bin/sh -c 'set -f"), command.index(STATE_SEPARATOR), command.index("sha256sum")
    assert probe_at < sep_at < state_at and command.startswith("{ ") and command.endswith("; }")


def test_roles_order_comes_from_meta_and_a_cycle_is_refused(tmp_path: Path) -> None:
    roles = load_roles()
    assert [r.name for r in select_roles(roles, "nvidia")] == ["nvidia_driver", "cuda_toolkit", "system_nccl",
                                                              "python_env", "env"]
    for name, after in (("a", "b"), ("b", "a")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "meta.yml").write_text(f"after: [{after}]\n")
    cyclic = {n: load_role(tmp_path / n) for n in ("a", "b")}
    with pytest.raises(ConfigError, match="cycle"):
        select_roles(cyclic, "cpu")


def test_a_notify_without_handler_names_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "tasks.yml").write_text("- name: x\n  kind: command\n  command: true\n  creates: /x\n"
                                              "  notify: reboot\n")
    with pytest.raises(ConfigError) as info:
        load_role(tmp_path / "r")
    assert "tasks.yml:1" in str(info.value)


def test_a_step_kind_is_one_that_steps_implements(tmp_path: Path) -> None:
    from accelstack.provision.steps import STEP_KINDS
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "tasks.yml").write_text("- name: ok\n  kind: command\n  command: true\n  creates: /x\n"
                                              "- name: x\n  kind: copy\n")
    with pytest.raises(ConfigError) as info:
        load_role(tmp_path / "r")
    assert "tasks.yml:5" in str(info.value)
    assert f"kind 'copy' is not one of {', '.join(STEP_KINDS)}" in str(info.value)
    assert {"installer", "pip", "template", "user", "package", "command"} <= set(STEP_KINDS)


def test_manifest_entries_are_checked() -> None:
    with pytest.raises(ConfigError, match="sha256"):
        parse_manifest({"artifacts": [{"file": "a.run", "sha256": "xyz", "size": 1, "component": "c",
                                       "version": "1"}]}, "manifest.yml")
    with pytest.raises(ConfigError, match="relative"):
        parse_manifest([{"file": "../a.run", "sha256": "a" * 64, "size": 1, "component": "c", "version": "1"}],
                       "manifest.yml")


def test_a_manifest_alias_bomb_or_bad_yaml_is_refused_at_its_line(tmp_path: Path) -> None:
    """manifest.yml goes through the loader every other YAML input uses: an alias bomb is refused at its line in
    well under a second (yaml.safe_load builds it, and the next walk over it never ends), bad YAML names its line."""
    import time

    from accelstack.provision.artifacts import ArtifactError, ArtifactRepository

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "manifest.yml").write_text("x0: &x0 [a, a, a, a, a, a, a, a, a, a]\n" + "".join(
        f"x{i + 1}: &x{i + 1} [{', '.join([f'*x{i}'] * 10)}]\n" for i in range(8)) + "artifacts: *x8\n")
    began = time.monotonic()
    with pytest.raises(ArtifactError) as bomb:
        ArtifactRepository.open(str(repo))
    assert time.monotonic() - began < 10
    assert f"{repo}/manifest.yml:" in str(bomb.value) and "alias bomb" in str(bomb.value), str(bomb.value)
    (repo / "manifest.yml").write_text("artifacts:\n  - file: a.run\n    size: 1: 2\n")
    with pytest.raises(ArtifactError, match=r"manifest\.yml:3: invalid YAML"):
        ArtifactRepository.open(str(repo))
    (repo / "manifest.yml").write_bytes(b"artifacts: \xff\xfe\n")
    with pytest.raises(ArtifactError, match="not UTF-8"):
        ArtifactRepository.open(str(repo))


def test_retry_failed_reads_the_newest_applying_run(tmp_path: Path) -> None:
    from accelstack.provision import failed_hosts_of_last_run
    from accelstack.results.records import Record, RunWriter

    assert failed_hosts_of_last_run(tmp_path) is None
    done = RunWriter("provision", base=tmp_path, run_id="20261101T000000Z-provision-aaaa",
                     meta={"hosts": ["n1", "n2", "n3"]})
    for host, status in (("n1", "pass"), ("n2", "error"), ("n3", "fail")):
        done.write(Record(host=host, check="provision", status=status, summary=""))  # type: ignore[arg-type]
    done.close()
    assert failed_hosts_of_last_run(tmp_path) == ["n2", "n3"]
    # A newer run killed halfway: hosts without a final record count as failed; a torn last line is ignored.
    cut = RunWriter("provision", base=tmp_path, run_id="20261102T000000Z-provision-bbbb",
                    meta={"hosts": ["n1", "n2", "n3"]})
    cut.write(Record(host="n2", check="provision", status="pass", summary=""))
    with (cut.path / "results.jsonl").open("a") as handle:
        handle.write('{"host": "n3", "check": "provis')
    assert failed_hosts_of_last_run(tmp_path) == ["n1", "n3"]


def test_every_missing_artifact_is_listed_not_only_the_first() -> None:
    plan, _, _ = plan_for(host(stack=ASCEND_STACK), facts(), artifacts=[])
    text = "\n".join(plan.problems)
    assert plan.changes == [] and len(plan.problems) >= 3, plan.problems
    for component in ("ascend_driver", "ascend_firmware", "cann_toolkit"):
        assert f"has no {component} " in text, text


def test_check_plan_table_shows_changes_converged_hosts_and_problems() -> None:
    """`inv provision --check`'s table (provision/render.py): a row per change with its bytes and reboot, one
    "no change" row for a converged host (its pending reboot shown), the problems of a host that cannot be
    planned."""
    from accelstack.provision.render import plan_table
    from accelstack.results.output import render_to_text

    fresh, _, view = plan_for(host(), facts())
    state = converge(fresh, view)
    converged, _, _ = plan_for(host(), facts(torch="2.13.0+cpu", python="3.11.2"), state)
    converged.reboot_pending = "driver upgraded"
    broken = HostPlan("npu09", problems=["no artifact for cann_toolkit 8.1.RC1"])
    text = render_to_text(plan_table({"zz-fresh": fresh, "aa-done": converged, "npu09": broken}), width=220)
    hosts = [line.split("│")[1].strip() for line in text.splitlines() if line.count("│") > 2]
    assert [h for h in hosts if h] == ["aa-done", "npu09"] + ["zz-fresh"] * 5  # hosts by name, a row per change
    assert "no change" in text and "yes (pending)" in text and "no artifact for cann_toolkit 8.1.RC1" in text
    assert "python_env.venv" in text and "torch: absent -> 2.13.0+cpu" in text
    assert str(fresh.changes[0].bytes_to_transfer) in text


# ----- the plan reads what is installed as drift does (accelstack.stacks.components) -----

NVIDIA_STACK = "nvidia-cuda13.0"
NV_ARTIFACTS = [
    art("torch", "2.10.0+cu130", "wheels/torch-2.10.0+cu130-cp311-cp311-linux_x86_64.whl", 2000),
    art("nccl", "2.28.9", "wheels/deps/nvidia_nccl_cu13-2.28.9-py3-none-manylinux_2_18_x86_64.whl", 300),
    art("python-dep", "2.27.5", "wheels/deps/nvidia_nccl_cu12-2.27.5-py3-none-manylinux_2_18_x86_64.whl", 290),
    art("python-dep", "1.14.0", "wheels/deps/sympy-1.14.0-py3-none-any.whl", 10),
]


def nvidia_facts(*, torch: str = "2.10.0+cu130", cuda: str = "13.0", nccl: str | None = "2.28.9",
                 system_nccl: str | None = None, python: str = "3.11.9") -> Facts:
    from accelstack.vendors.nvidia.facts import NvidiaFacts

    f = facts(torch=torch, python=python)
    assert f.torch is not None
    f.torch.cuda, f.torch.nccl = cuda, nccl
    f.nvidia = NvidiaFacts(driver_version="580.65.06", cuda="13.0.48", nccl=system_nccl)
    return f


def component_steps(plan: HostPlan) -> list[str]:
    return [c.step for c in plan.changes if not c.step.startswith("env.")]


def test_an_ascend_host_whose_cann_reads_as_internal_numbers_is_at_its_pins() -> None:
    # version.cfg-less trees give the kernels' version_dir (7.7.0.1.238, CANN 8.1.RC1's internal number): drift
    # read it as 8.1.RC1 and passed; the installer step compared the text and installed the kernels on every run.
    from accelstack.stacks import drift_records, load_stack

    ascend = AscendFacts(driver="24.1.rc2", firmware="7.3.0.1.231", cann_toolkit="8.1.RC1",
                         cann_kernels="7.7.0.1.238", nnal="8.1.RC1")
    f = facts(ascend=ascend, torch="2.5.1", torch_npu="2.5.1", python="3.11.9")
    records = drift_records("node1", load_stack(ASCEND_STACK), f.components())
    assert {r.check: r.status for r in records}["drift.cann_kernels"] == "pass"
    plan, _, _ = plan_for(host(stack=ASCEND_STACK, ascend_driver_packages=[]), f,
                          RemoteState(users={"HwHiAiUser"}, groups={"HwHiAiUser"}))
    assert plan.problems == [] and component_steps(plan) == []


def test_python_is_the_stacks_python_for_drift_and_the_plan_alike() -> None:
    # No venv yet, the host's python3 is 3.11: drift once passed python on the host's interpreter while the plan
    # made the venv; both now say the stack's python is not there.
    from accelstack.stacks import drift_records, load_stack

    f = facts()
    f.python_version = "3.11.2"
    python = {r.check: r for r in drift_records("node1", load_stack("cpu"), f.components())}["drift.python"]
    assert python.status == "fail" and python.evidence["installed"] is None
    assert "the host's python3 is 3.11.2" in python.summary
    plan, _, _ = plan_for(host(), f)
    assert component_steps(plan) == ["python_env.venv"]


def test_a_validated_nvidia_host_has_no_component_step_and_needs_no_repository() -> None:
    # torch's NCCL at the pin, a system libnccl of another release beside it, no system_nccl pin: nothing to do.
    stack = Path(__file__).parent / "data" / "h200" / "dev-real.yml"
    f = nvidia_facts(torch="2.11.0+cu130", system_nccl="2.28.3", python="3.12.3")
    assert f.nvidia is not None
    f.nvidia.driver_version, f.nvidia.cuda = "580.159.04", "13.0.88"
    plan, _, _ = plan_for(host(stack=str(stack)), f, artifacts=[], repo=None)
    assert plan.problems == [] and component_steps(plan) == []


def test_torch_cuda_that_differs_is_the_pip_steps_to_fix_with_the_build_named(tmp_path: Path) -> None:
    # torch pinned without a build tag: 2.10.0 is met by a cu128 build, but torch_cuda 13.0 is not.
    import yaml

    doc = yaml.safe_load((project_root() / "stacks" / f"{NVIDIA_STACK}.yml").read_text())
    doc["name"], doc["components"]["torch"] = "untagged", "2.10.0"
    path = tmp_path / "untagged.yml"
    path.write_text(yaml.safe_dump(doc))
    plan, _, _ = plan_for(host(stack=str(path)), nvidia_facts(torch="2.10.0+cu128", cuda="12.8", system_nccl="2.28.9"),
                          artifacts=NV_ARTIFACTS)
    venv = next(c for c in plan.changes if c.step == "python_env.venv")
    assert venv.summary == "torch_cuda: 12.8 -> 13.0"
    assert "torch==2.10.0+cu130" in venv.commands[1] and "nvidia-nccl-cu13==2.28.9" in venv.commands[1]


def test_an_nccl_changed_under_torch_goes_back_through_its_wheel() -> None:
    f = nvidia_facts(nccl="2.27.5", system_nccl="2.28.9")
    plan, _, _ = plan_for(host(stack=NVIDIA_STACK), f, artifacts=NV_ARTIFACTS)
    venv = next(c for c in plan.changes if c.step == "python_env.venv")
    assert venv.summary == "nccl: 2.27.5 -> 2.28.9"
    assert venv.commands[1].endswith("torch==2.10.0+cu130 nvidia-nccl-cu13==2.28.9")
    # The wheel at the pin travels; the cu12 NCCL wheel of another release does not.
    names = {u.artifact.name for u in venv.uploads}
    assert "nvidia_nccl_cu13-2.28.9-py3-none-manylinux_2_18_x86_64.whl" in names
    assert not any(n.startswith("nvidia_nccl_cu12") for n in names)
    # Without its wheel, installing torch again would leave the NCCL as it is: a problem, not a no-op step.
    bare = [a for a in NV_ARTIFACTS if a.component != "nccl"]
    missing, _, _ = plan_for(host(stack=NVIDIA_STACK), f, artifacts=bare)
    assert any("nccl 2.28.9 (the nvidia-nccl wheel torch loads)" in p for p in missing.problems), missing.problems


def test_the_system_nccl_role_acts_only_for_a_stack_that_pins_it() -> None:
    from accelstack.provision.roles import load_roles

    role = load_roles()["system_nccl"]
    assert [(s.name, s.kind) for s in role.steps] == [("loader-path", "template"), ("library", "installer")]
    assert role.steps[1].spec["component"] == "system_nccl"
    f = nvidia_facts(system_nccl=None)
    plan, _, _ = plan_for(host(stack=NVIDIA_STACK), f,
                          artifacts=NV_ARTIFACTS + [art("system_nccl", "2.28.9", "nccl_2.28.9-1+cuda13.0_x86_64.run")])
    # Everything else is at its pin; the loader path goes first, so the install's ldconfig already sees it.
    assert component_steps(plan) == ["system_nccl.loader-path", "system_nccl.library"]
    library = next(c for c in plan.changes if c.step == "system_nccl.library")
    assert library.summary == "system_nccl: absent -> 2.28.9"


def test_a_venv_that_nothing_judges_is_not_planned() -> None:
    # stack_python names another interpreter (the embedded default: the one running accelstack): facts, drift and
    # validate read that one, so making the stack's venv elsewhere would change nothing they judge.
    plan, _, _ = plan_for(host(stack_python="/usr/bin/python3"), facts())
    assert plan.changes == [] and len(plan.problems) == 1
    assert "stack python is /usr/bin/python3 (stack_python)" in plan.problems[0]
    # At its pins there, nothing is planned and nothing is wrong.
    at_pin, _, _ = plan_for(host(stack_python="/usr/bin/python3"), facts(torch="2.13.0+cpu", python="3.11.2"),
                            artifacts=[], repo=None)
    assert at_pin.problems == [] and "python_env.venv" not in [c.step for c in at_pin.changes]
    # Pointing into the venv is the venv's own python.
    inside, _, _ = plan_for(host(stack_python="/opt/accelstack/venv/bin/python3.11"), facts())
    assert inside.problems == [] and inside.changes[0].step == "python_env.venv"
