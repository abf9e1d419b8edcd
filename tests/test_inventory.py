"""The inventory layer: our YAML, Ansible INI and YAML, ranges, --limit patterns, precedence and errors.

Pure: fixtures under tests/data/inventories and files written to tmp_path; nothing connects anywhere.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from accelstack.errors import EXIT_BAD_INPUT, InventoryError
from accelstack.inventory import Host, Inventory, load_inventory, merge_layers
from accelstack.inventory.patterns import split_terms
from accelstack.inventory.ranges import expand_range, split_port_suffix

DATA = Path(__file__).parent / "data" / "inventories"
REPO = Path(__file__).resolve().parent.parent


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def load_error(path: Path) -> str:
    with pytest.raises(InventoryError) as info:
        load_inventory(str(path))
    assert info.value.exit_code == EXIT_BAD_INPUT
    return str(info.value)


def names(hosts: list[Host]) -> list[str]:
    return [host.name for host in hosts]


# --- ranges -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("node[01:03]", ["node01", "node02", "node03"]),
        ("node[1:3]", ["node1", "node2", "node3"]),
        ("node[8:11]", ["node8", "node9", "node10", "node11"]),
        ("node[001:100:33]", ["node001", "node034", "node067", "node100"]),
        ("rack[a:c]", ["racka", "rackb", "rackc"]),
        ("r[1:2]-n[a:b]", ["r1-na", "r1-nb", "r2-na", "r2-nb"]),
        ("plain", ["plain"]),
    ],
)
def test_expand_range(pattern: str, expected: list[str]) -> None:
    assert expand_range(pattern) == expected


@pytest.mark.parametrize("pattern", ["n[5:1]", "n[01:100]", "n[a:5]", "n[1:3:0]", "n[1:]", "n[c:a]"])
def test_bad_ranges_raise(pattern: str) -> None:
    with pytest.raises(ValueError):
        expand_range(pattern)


def test_port_suffix_leaves_range_colons_alone() -> None:
    assert split_port_suffix("node[1:4]:2222") == ("node[1:4]", 2222)
    assert split_port_suffix("node[1:4]") == ("node[1:4]", None)
    assert split_port_suffix("fe80::1") == ("fe80::1", None)


# --- our YAML format ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fleet() -> Inventory:
    return load_inventory(str(DATA / "native" / "fleet.yml"))


def test_native_hosts_groups_and_ranges(fleet: Inventory) -> None:
    assert fleet.name == "fleet"
    assert list(fleet.hosts) == ["localhost", "npu01", "npu02", "npu03", "npu04", "npu05", "bastion"]
    assert [fleet.hosts[f"npu0{i}"].address for i in range(1, 5)] == [f"10.0.0.1{i}" for i in range(1, 5)]
    assert names(fleet.group_hosts("npu")) == ["npu01", "npu02", "npu03", "npu04", "npu05"]
    assert names(fleet.group_hosts("train")) == ["npu01", "npu03", "npu05"]
    assert names(fleet.group_hosts("ungrouped")) == ["localhost", "bastion"]
    assert names(fleet.group_hosts("all")) == list(fleet.hosts)
    assert fleet.groups["npu"].children == ["rack1", "rack2"]
    assert fleet.groups["rack1"].vars == {"level": "rack1", "gv": "rack1-inline"}
    assert fleet.hosts["npu01"].groups == ("npu", "train", "rack1")
    assert fleet.hosts["npu01"].source.endswith("fleet.yml:13")
    assert fleet.hosts["npu05"].source.endswith("fleet.yml:15")


def test_native_connection_fields(fleet: Inventory) -> None:
    local, npu05, bastion = fleet.hosts["localhost"], fleet.hosts["npu05"], fleet.hosts["bastion"]
    assert local.connection == "local" and local.is_local
    assert (npu05.address, npu05.port, npu05.user) == ("10.0.0.15", 2222, "ops")
    assert bastion.accept_new_host_keys is True
    assert fleet.hosts["npu01"].accept_new_host_keys is False
    # Connection settings are fields, not vars, whichever spelling (ansible_user from group_vars/all.yml).
    for host in fleet.hosts.values():
        assert not {"address", "port", "user", "key", "connection", "known_hosts", "ansible_user"} & set(host.vars)


def test_relative_key_and_known_hosts_resolve_against_the_inventory_folder(fleet: Inventory) -> None:
    folder = (DATA / "native").resolve()
    npu01 = fleet.hosts["npu01"]
    assert npu01.key_file == str(folder / "keys" / "id_ed25519")
    assert npu01.known_hosts == str(folder / "known_hosts")
    assert fleet.hosts["bastion"].key_file == "/etc/accelstack/bastion_key"


def test_paths_resolve_against_the_inventory_not_the_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inv_path = write(tmp_path, "site/inv.yml", """
        vars: {key: ../keys/id_ed25519, known_hosts: known_hosts}
        hosts:
          a: {}
          b: {key: "~/.ssh/b_key"}
    """)
    monkeypatch.chdir(tmp_path)
    inv = load_inventory(str(inv_path))
    assert inv.hosts["a"].key_file == str(tmp_path.resolve() / "keys" / "id_ed25519")
    assert inv.hosts["a"].known_hosts == str(tmp_path.resolve() / "site" / "known_hosts")
    assert inv.hosts["b"].key_file == os.path.expanduser("~/.ssh/b_key")


# --- precedence ---------------------------------------------------------------------------------------------


def test_child_group_beats_parent_and_depth_beats_name(fleet: Inventory) -> None:
    # npu01 is in npu (depth 1), train (depth 1) and rack1 (depth 2): rack1 wins, though "train" > "rack1".
    assert fleet.hosts["npu01"].vars["level"] == "rack1"
    assert fleet.hosts["npu03"].vars["level"] == "rack2"
    assert fleet.hosts["npu04"].vars["parent_only"] == "from-npu"
    assert fleet.hosts["bastion"].vars["level"] == "all"


def test_same_depth_groups_apply_in_name_order(tmp_path: Path) -> None:
    inv = load_inventory(str(write(tmp_path, "inv.yml", """
        hosts: {h: {}}
        groups:
          zeta: {hosts: [h], vars: {v: zeta}}
          alpha: {hosts: [h], vars: {v: alpha}}
    """)))
    assert inv.hosts["h"].vars["v"] == "zeta"
    assert inv.hosts["h"].groups == ("alpha", "zeta")


def test_host_inline_beats_groups_and_group_vars_files(fleet: Inventory) -> None:
    assert fleet.hosts["npu05"].vars["level"] == "host-inline"
    assert fleet.hosts["npu05"].user == "ops"  # inline user beats ansible_user in group_vars/all.yml
    assert fleet.hosts["npu01"].user == "admin"


def test_group_vars_files_beat_inline_group_vars(fleet: Inventory) -> None:
    # rack1 sets gv inline; group_vars/npu.yml (a parent's file) still wins: files rank above the inventory.
    assert fleet.hosts["npu01"].vars["gv"] == "npu-file"
    assert fleet.hosts["bastion"].vars["gv"] == "all-file"
    # group_vars/rack2/ is a folder: its files apply in name order.
    assert fleet.hosts["npu03"].vars["ifname"] == "eth1"
    assert "ifname" not in fleet.hosts["npu01"].vars
    # group_vars/gpu.yml names a group this inventory lacks: ignored.
    assert all(host.vars.get("gv") != "never-used" for host in fleet.hosts.values())


def test_host_vars_file_beats_everything(fleet: Inventory) -> None:
    assert fleet.hosts["npu02"].vars["level"] == "host-file"
    assert fleet.hosts["npu02"].vars["gv"] == "host-file"


def test_nested_dicts_merge_across_layers(fleet: Inventory) -> None:
    assert fleet.hosts["npu03"].vars["nested"] == {"a": 1, "b": {"c": 1, "d": 2}}
    assert fleet.hosts["npu01"].vars["nested"] == {"a": 1, "b": {"c": 1}}


def test_merge_layers() -> None:
    base = {"a": 1, "d": {"x": 1, "y": {"z": 1}}, "l": [1, 2]}
    top = {"a": 2, "d": {"y": {"w": 2}}, "l": [3]}
    merged = merge_layers(base, None, top)
    assert merged == {"a": 2, "d": {"x": 1, "y": {"z": 1, "w": 2}}, "l": [3]}
    merged["d"]["x"] = 99
    assert base["d"]["x"] == 1  # shares nothing with its inputs
    assert merge_layers() == {}


def test_ansible_alias_in_a_later_layer_overrides_ours(tmp_path: Path) -> None:
    write(tmp_path, "host_vars/h.yml", "ansible_host: 10.9.9.9\nansible_port: 2200\n")
    inv = load_inventory(str(write(tmp_path, "inv.yml", "hosts:\n  h: {address: 10.0.0.1, port: 22}\n")))
    assert (inv.hosts["h"].address, inv.hosts["h"].port) == ("10.9.9.9", 2200)


# --- Ansible INI --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def deepops() -> Inventory:
    return load_inventory(str(DATA / "deepops" / "hosts"))


def test_deepops_ini(deepops: Inventory) -> None:
    assert list(deepops.hosts) == ["mgmt01", "mgmt02", "mgmt03", "login01", "gpu01", "gpu02", "gpu03",
                                   "localhost"]
    assert deepops.hosts["mgmt02"].address == "10.0.0.2"
    assert deepops.hosts["gpu01"].user == "ubuntu"
    assert deepops.hosts["gpu03"].user == "dgxuser"
    assert deepops.hosts["gpu01"].key_file == os.path.expanduser("~/.ssh/id_rsa")
    assert deepops.hosts["localhost"].connection == "local"
    assert names(deepops.group_hosts("k8s-cluster")) == ["mgmt01", "mgmt02", "mgmt03", "gpu01", "gpu02"]
    assert names(deepops.group_hosts("slurm-cluster")) == ["login01", "gpu01", "gpu02", "gpu03"]
    assert names(deepops.group_hosts("ungrouped")) == ["localhost"]
    gpu01 = deepops.hosts["gpu01"].vars
    assert gpu01["slurm_version"] == "23.11.4"  # quoted: stays a string
    assert gpu01["slurm_enable_nfs_client_nodes"] is True
    assert gpu01["nfs_exports_count"] == 2
    assert gpu01["gpu_clock_lock"] is False
    assert "gpu_clock_lock" not in deepops.hosts["mgmt01"].vars
    assert deepops.hosts["gpu03"].source.endswith("deepops/hosts:12")


def test_kubespray_ini(tmp_path: Path) -> None:
    inv = load_inventory(str(DATA / "kubespray" / "inventory.ini"))
    assert list(inv.hosts) == [f"node{i}" for i in range(1, 7)]
    assert inv.hosts["node6"].port == 2222 and inv.hosts["node6"].address == "95.54.0.17"
    assert inv.hosts["node4"].vars == {"ip": "10.3.0.4", "etcd_member_name": ""}
    assert inv.groups["calico_rr"].hosts == []
    assert names(inv.group_hosts("k8s_cluster")) == [f"node{i}" for i in range(1, 7)]
    assert inv.hosts["node2"].groups == ("etcd", "k8s_cluster", "kube_control_plane", "kube_node")


def test_ini_values_coercion_and_quoting(tmp_path: Path) -> None:
    inv = load_inventory(str(write(tmp_path, "hosts.ini", """
        node[01:02] ansible_host=10.0.0.1 ansible_port=2200 devices=8 flag=TRUE id=007 ver="8" name='a b'
        [all:vars]
        note = "quoted # not a comment"
        raw = left as # it is
        off=False
    """)))
    node = inv.hosts["node01"]
    assert node.port == 2200
    assert node.vars["devices"] == 8 and node.vars["flag"] is True
    assert node.vars["id"] == "007" and node.vars["ver"] == "8" and node.vars["name"] == "a b"
    assert node.vars["note"] == "quoted # not a comment"
    assert node.vars["raw"] == "left as # it is"
    assert node.vars["off"] is False


def test_ini_detected_without_extension_and_bare_host_lines(tmp_path: Path) -> None:
    inv = load_inventory(str(write(tmp_path, "hosts", "# bare\nlocalhost ansible_connection=local\nnode1\n")))
    assert list(inv.hosts) == ["localhost", "node1"]
    assert inv.hosts["localhost"].connection == "local"


def test_same_host_in_two_groups_is_fine(tmp_path: Path) -> None:
    inv = load_inventory(str(write(tmp_path, "inv.ini", """
        [a]
        n1 ansible_host=10.0.0.1 role=x
        [b]
        n1 ansible_host=10.0.0.1 rack=2
        [c]
        n1
    """)))
    assert inv.hosts["n1"].groups == ("a", "b", "c")
    assert inv.hosts["n1"].vars == {"role": "x", "rack": 2}


# --- Ansible YAML -------------------------------------------------------------------------------------------


def test_kubespray_yaml() -> None:
    inv = load_inventory(str(DATA / "kubespray" / "hosts.yaml"))
    assert list(inv.hosts) == ["node1", "node2", "node3"]
    assert inv.hosts["node1"].address == "95.54.0.12"
    assert inv.hosts["node1"].vars == {"ip": "10.3.0.1", "access_ip": "10.3.0.1"}
    assert names(inv.group_hosts("k8s_cluster")) == ["node1", "node2", "node3"]
    assert inv.groups["k8s_cluster"].children == ["kube_control_plane", "kube_node"]
    assert inv.groups["calico_rr"].hosts == []


def test_ansible_yaml_ranges_ports_nested_groups() -> None:
    inv = load_inventory(str(DATA / "ansible_yaml" / "ascend.yml"))
    assert names(inv.group_hosts("npu")) == ["npu-a01", "npu-a02", "npu-a03", "npu-a04", "npu-b01", "npu-b02",
                                            "npu-b03"]
    assert inv.hosts["localhost"].connection == "local"
    assert inv.hosts["npu-a01"].user == "root"
    assert inv.hosts["npu-a01"].vars == {"stack": "ascend-910b-cann8.1.rc1", "expect_devices": 8,
                                         "hccl_socket_ifname": "eth0"}
    assert inv.hosts["npu-b02"].port == 2222
    assert (inv.hosts["npu-b03"].address, inv.hosts["npu-b03"].port) == ("10.1.0.3", 2200)
    assert names(inv.group_hosts("train")) == ["npu-b01", "npu-b02", "npu-b03"]
    assert inv.hosts["npu-b01"].groups == ("npu", "train", "rack_b")


def test_ansible_yaml_without_all_key(tmp_path: Path) -> None:
    inv = load_inventory(str(write(tmp_path, "inv.yml", """
        gpu:
          hosts:
            gpu1: {ansible_host: 10.0.0.1}
          vars: {expect_devices: 8}
    """)))
    assert inv.hosts["gpu1"].address == "10.0.0.1" and inv.hosts["gpu1"].vars == {"expect_devices": 8}


# --- data stays data ----------------------------------------------------------------------------------------


def test_shell_metacharacters_are_kept_verbatim(tmp_path: Path) -> None:
    evil = "; touch /tmp/pwned"
    yml = load_inventory(str(write(tmp_path, "a.yml", f"""
        vars: {{motd: "{evil}"}}
        hosts: {{h: {{banner: "$(reboot) `id`"}}}}
    """)))
    ini = load_inventory(str(write(tmp_path, "b.ini", f"""
        h motd='{evil}' banner="$(reboot)"
        [all:vars]
        other={evil}
    """)))
    assert yml.hosts["h"].vars["motd"] == evil
    assert yml.hosts["h"].vars["banner"] == "$(reboot) `id`"
    assert ini.hosts["h"].vars["motd"] == evil
    assert ini.hosts["h"].vars["other"] == evil
    assert ini.hosts["h"].vars["banner"] == "$(reboot)"
    assert not Path("/tmp/pwned").exists()


# --- --limit patterns ---------------------------------------------------------------------------------------


def test_split_terms_keeps_range_colons() -> None:
    assert split_terms("a,b:c") == ["a", "b", "c"]
    assert split_terms("node[01:03]:!node02") == ["node[01:03]", "!node02"]


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        (None, ["mgmt01", "mgmt02", "mgmt03", "login01", "gpu01", "gpu02", "gpu03", "localhost"]),
        ("all", ["mgmt01", "mgmt02", "mgmt03", "login01", "gpu01", "gpu02", "gpu03", "localhost"]),
        ("*", ["mgmt01", "mgmt02", "mgmt03", "login01", "gpu01", "gpu02", "gpu03", "localhost"]),
        ("gpu02", ["gpu02"]),
        ("gpu02,mgmt01", ["mgmt01", "gpu02"]),
        ("kube-node", ["gpu01", "gpu02"]),
        ("k8s-cluster", ["mgmt01", "mgmt02", "mgmt03", "gpu01", "gpu02"]),
        ("gpu0*", ["gpu01", "gpu02", "gpu03"]),
        ("mgmt0[1-2]", ["mgmt01", "mgmt02"]),
        ("gpu[01:02]", ["gpu01", "gpu02"]),
        ("slurm-*", ["login01", "gpu01", "gpu02", "gpu03"]),
        ("k8s-cluster:!kube-master", ["gpu01", "gpu02"]),
        ("k8s-cluster,!gpu01", ["mgmt01", "mgmt02", "mgmt03", "gpu02"]),
        ("slurm-node:&kube-node", ["gpu01", "gpu02"]),
        ("&kube-node", ["gpu01", "gpu02"]),
        ("!slurm-cluster,!k8s-cluster", ["localhost"]),
        ("!gpu01,gpu0*", ["gpu02", "gpu03"]),
        ("~^mgmt0[23]$", ["mgmt02", "mgmt03"]),
        ("gpu*,!nothing-like-this", ["gpu01", "gpu02", "gpu03"]),
    ],
)
def test_limit_patterns(deepops: Inventory, limit: str | None, expected: list[str]) -> None:
    assert names(deepops.select(limit)) == expected


@pytest.mark.parametrize("limit", ["gpu9", "gpu01,nod01", "rack*", "gpu01:&kube-master", "gpu[07:09]"])
def test_limit_matching_nothing_is_an_error_naming_the_pattern(deepops: Inventory, limit: str) -> None:
    with pytest.raises(InventoryError) as info:
        deepops.select(limit)
    assert info.value.exit_code == EXIT_BAD_INPUT
    assert "matches no host" in str(info.value) or "selects no host" in str(info.value)
    assert limit in str(info.value)


def test_limit_bad_range_is_an_error(deepops: Inventory) -> None:
    with pytest.raises(InventoryError, match=r"\[5:1\]"):
        deepops.select("gpu[5:1]")


def test_unknown_group_hosts_is_an_error(deepops: Inventory) -> None:
    with pytest.raises(InventoryError, match="no group 'nope'"):
        deepops.group_hosts("nope")


# --- locating inventories -----------------------------------------------------------------------------------


def test_names_resolve_in_the_search_dir(tmp_path: Path) -> None:
    write(tmp_path, "npu8.yml", "hosts: {a: {}}\n")
    write(tmp_path, "lab.ini", "b\n")
    write(tmp_path, "hosts", "c\n")
    assert list(load_inventory("npu8", search_dir=tmp_path).hosts) == ["a"]
    assert list(load_inventory("lab", search_dir=tmp_path).hosts) == ["b"]
    assert list(load_inventory("hosts", search_dir=tmp_path).hosts) == ["c"]
    assert load_inventory("npu8.yml", search_dir=tmp_path).name == "npu8"


def test_default_is_local_yml_under_the_project_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "inventories/local.yml", "vars: {stack: cpu}\nhosts: {localhost: {connection: local}}\n")
    monkeypatch.setenv("ACCELSTACK_HOME", str(tmp_path))
    inv = load_inventory()
    assert inv.name == "local" and inv.path == tmp_path.resolve() / "inventories" / "local.yml"


def test_missing_inventory_lists_the_available_names(tmp_path: Path) -> None:
    write(tmp_path, "npu8.yml", "hosts: {a: {}}\n")
    write(tmp_path, "gpu8.yaml", "hosts: {a: {}}\n")
    (tmp_path / "group_vars").mkdir()
    with pytest.raises(InventoryError) as info:
        load_inventory("npu9", search_dir=tmp_path)
    message = str(info.value)
    assert "npu9" in message and "gpu8, npu8" in message and "group_vars" not in message
    assert info.value.exit_code == EXIT_BAD_INPUT
    with pytest.raises(InventoryError, match="no inventory file"):
        load_inventory(str(tmp_path / "nope.yml"))


def test_shipped_examples_load() -> None:
    folder = REPO / "inventories"
    local = load_inventory("local", search_dir=folder)
    assert list(local.hosts) == ["localhost"]
    host = local.hosts["localhost"]
    assert host.connection == "local" and host.vars["stack"] == "cpu" and host.vars["expect_devices"] == 0
    npu8 = load_inventory("npu8", search_dir=folder)
    assert len(npu8.hosts) == 16 and npu8.hosts["npu16"].address == "10.20.0.26"
    assert {h.vars["expect_devices"] for h in npu8.hosts.values()} == {8}
    assert npu8.hosts["npu01"].vars["stack"] == "ascend-910b-cann8.1.rc1"
    assert npu8.hosts["npu01"].vars["accelerator"] == "910B3"
    gpu8 = load_inventory("gpu8", search_dir=folder)
    assert gpu8.hosts["gpu01"].vars["stack"] == "nvidia-cuda12.8"
    assert gpu8.hosts["gpu01"].vars["accelerator"] == "H100"
    assert "nccl_socket_ifname" in gpu8.hosts["gpu01"].vars


def test_hosts_are_hashable(fleet: Inventory) -> None:
    assert len(set(fleet.hosts.values())) == len(fleet.hosts)


# --- errors: every one names the file and the line ----------------------------------------------------------


ERROR_CASES = [
    # (file name, text, line, words in the message)
    ("bad.yml", "hosts:\n  a: {address: 10.0.0.1\n  b: {}\n", 3, "(while parsing a flow mapping at line 2)"),
    ("tab.yml", "vars:\n  stack: cpu\nhosts:\n\ta: {}\n", 4, "invalid YAML"),
    ("dup.yml", "hosts:\n  a: {}\n  b: {}\n  a: {}\n", 4, "duplicate key 'a' (first at line 2)"),
    ("flow.yml", "hosts:\n  node[01:02]: {}\ngroups:\n  g: {hosts: [node[01:02]]}\n", 4, "quote a host range"),
    ("top.yml", "vars: {}\nhosts: {a: {}}\ngroup:\n  g: {}\n", 3, "unknown top-level key 'group'"),
    ("gkey.yml", "hosts: {a: {}}\ngroups:\n  g:\n    host: [a]\n", 4, "unknown key 'host' in group g"),
    ("child.yml", "hosts: {a: {}}\ngroups:\n  g:\n    hosts: [a]\n    children:\n      - rack9\n", 6,
     "group rack9 is used as a child but is never defined"),
    ("ref.yml", "hosts: {a: {}}\ngroups:\n  g:\n    hosts:\n      - a\n      - b\n", 6,
     "group g lists host b, which is not defined"),
    ("grpref.yml", "hosts: {a: {}}\ngroups:\n  g: {hosts: [a]}\n  h:\n    hosts: [g]\n", 5, "g is a group"),
    ("cycle.yml", "hosts: {a: {}}\ngroups:\n  x: {children: [y]}\n  y:\n    hosts: [a]\n    children: [x]\n",
     3, "cycle"),
    ("conflict.yml", "hosts:\n  n[1:3]:\n    address: 10.0.0.[1:3]\n  n2: {address: 10.0.0.9}\n", 4,
     "host n2 is defined twice with a different address"),
    ("pair.yml", "hosts:\n  n[1:3]:\n    address: 10.0.0.[1:2]\n", 3, "gives 2 values for 3 hosts"),
    ("empty_range.yml", "vars: {}\nhosts:\n  node[5:1]: {}\n", 3, "expands to no host"),
    ("empty_ref.yml", "hosts: {a: {}}\ngroups:\n  g:\n    hosts:\n      - a\n      - \"b[5:1]\"\n", 6,
     "expands to no host"),
    ("port.yml", "hosts:\n  a: {}\n  b:\n    address: 10.0.0.2\n    port: abc\n", 5,
     "port 'abc' is not an integer 1-65535"),
    ("port_range.yml", "vars:\n  port: 70000\nhosts: {a: {}}\n", 2, "port 70000 is not an integer 1-65535"),
    ("port_bool.yml", "hosts:\n  a: {port: true}\n", 2, "port True is not an integer"),
    ("conn.yml", "hosts:\n  a: {}\n  b:\n    connection: winrm\n", 4, "unknown connection 'winrm'"),
    ("accept.yml", "hosts:\n  a:\n    accept_new_host_keys: maybe\n", 3, "accept_new_host_keys must be true"),
    ("keep.yml", "vars:\n  stack: cpu\n  node_keep_runs: -1\nhosts: {a: {}}\n", 3,
     "node_keep_runs: -1 is out of range (expected a whole number >= 0)"),
    ("keepstr.ini", "[all]\nnode01\n[all:vars]\nnode_keep_runs=many\n", 4,
     "node_keep_runs: 'many' is not a whole number"),
    # Vars the checks read as numbers or known values: a typo is bad input, never a host's verdict.
    ("devs.yml", "hosts:\n  a:\n    expect_devices: eight\n", 3,
     "expect_devices: 'eight' is not a whole number (expected a whole number >= 0)"),
    ("devsneg.yml", "vars:\n  expect_devices: -3\nhosts: {a: {}}\n", 2, "expect_devices: -3 is out of range"),
    ("devsini.ini", "[gpu]\nn1 expect_devices=eight\n", 2, "expect_devices: 'eight' is not a whole number"),
    ("devsgrp.yml", "hosts: {a: {}}\ngroups:\n  g:\n    hosts: [a]\n    vars: {expect_devices: 1.5}\n", 5,
     "expect_devices: 1.5 is not a whole number"),
    ("backend.yml", "hosts:\n  a: {backend: ncl}\n", 2, "backend: 'ncl' is not one of hccl, nccl, gloo"),
    ("rdzv.yml", "hosts:\n  a: {rendezvous_port: 70000}\n", 2, "rendezvous_port: 70000 is out of range"),
    ("deadline.yml", "hosts:\n  a: {multinode_deadline_s: 2m}\n", 2, "multinode_deadline_s: '2m' is not a number"),
    ("sizes.yml", "hosts:\n  a:\n    validate_sizes: [1024, 1M]\n", 3,
     "validate_sizes[1]: '1M' is not a whole number (expected a whole number >= 1)"),
    ("iters.yml", "hosts:\n  a: {cluster_iters: 0}\n", 2, "cluster_iters: 0 is out of range"),
    ("xid.yml", "hosts:\n  a: {health_xid_window_s: a day}\n", 2, "health_xid_window_s: 'a day' is not a number"),
    ("envvar.yml", "hosts:\n  a:\n    env: [NCCL_DEBUG=INFO]\n", 3, "env: a list, not a mapping"),
    ("thr.yml", "hosts:\n  a:\n    thresholds: {margin: lots}\n", 3, "thresholds.margin: 'lots' is not a number"),
    ("rows.yml", "hosts:\n  a:\n    device_thresholds: [h100]\n", 3, "device_thresholds[0]: a string, not a row"),
    ("reboot.yml", "hosts:\n  a: {reboot_expect_new_boot: maybe}\n", 2,
     "reboot_expect_new_boot: 'maybe' is not true or false"),
    ("python.yml", "hosts:\n  a:\n    stack_python: [python3]\n", 3, "stack_python: ['python3'] is a list, not a path"),
    ("huge.yml", "hosts:\n  n[00000000:19999999]: {}\n", 2,
     "n[00000000:19999999] stands for 20,000,000 hosts; an inventory holds at most 200,000"),
    ("huge2.ini", "[a]\nn[1:4][1:99999]\n", 2, "stands for 399,996 hosts"),
    ("bomb.yml", "vars:\n  a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"  {c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefg", "bcdefgh", strict=True))
     + "hosts: {n: {}}\n", 6, "refused: its aliases expand to more than 100,000 values"),
    ("alias.yml", "hosts:\n  a:\n    address: 10.0.0.1\n    ansible_host: 10.0.0.2\n", 4, "give one of them"),
    ("list.yml", "- a\n- b\n", 1, "mapping at the top level"),
    ("nohost.yml", "# nothing\nvars: {stack: cpu}\n", 1, "defines no host"),
    ("aychild.yml", "all:\n  children:\n    k8s:\n      children:\n        kube_node:\n", 5,
     "group kube_node is used as a child but is never defined"),
    ("aydup.yml", ("all:\n  children:\n    a:\n      hosts:\n        n1: {ansible_host: 10.0.0.1}\n"
                   "    b:\n      hosts:\n        n1: {ansible_host: 10.0.0.2}\n"), 8, "different address"),
    ("ayconn.yml", "all:\n  hosts:\n    w1:\n      ansible_connection: winrm\n", 4, "unknown connection"),
    ("header.ini", "[npu]\nnode01\n[npu:vars\nx=1\n", 3, "malformed section header"),
    ("kind.ini", "[npu]\nnode01\n\n[npu:hosts]\nnode02\n", 4, "unknown section type ':hosts'"),
    ("kv.ini", "[npu]\nnode01 ansible_host=10.0.0.1\nnode02 ansible_host\n", 3, "expected key=value"),
    ("quote.ini", "# fleet\n[npu]\nnode01 motd='unterminated\n", 3, "unterminated ' quote"),
    ("vars.ini", "[npu]\nnode01\n[npu:vars]\nexpect_devices 8\n", 4, "expected key=value in a :vars section"),
    ("childsp.ini", "[a]\nn1\n[b:children]\na extra\n", 4, "one group name a line"),
    ("inichild.ini", "[npu]\nnode01\n\n[cluster:children]\nnpu\nrack9\n", 6,
     "group rack9 is used as a child but is never defined"),
    ("iniconflict.ini", "[a]\nn1 ansible_host=10.0.0.1\n[b]\nn1 ansible_host=10.0.0.2\n", 4,
     "different address"),
    ("iniport.ini", "[a]\nn1\nn2 ansible_port=0\n", 3, "port 0 is not an integer 1-65535"),
    ("inirange.ini", "[a]\n; odd racks\nnode[09:01]\n", 3, "expands to no host"),
    ("iniconn.ini", "[all:vars]\nansible_connection=docker\n[a]\nn1\n", 2, "unknown connection 'docker'"),
    ("inicycle.ini", "[a:children]\nb\n[b:children]\na\n[b]\nn1\n", 2, "cycle"),
]


@pytest.mark.parametrize(("name", "text", "line", "words"), ERROR_CASES, ids=[case[0] for case in ERROR_CASES])
def test_errors_name_file_and_line(tmp_path: Path, name: str, text: str, line: int, words: str) -> None:
    path = tmp_path / "inventories" / name
    path.parent.mkdir()
    path.write_text(text)
    message = load_error(path)
    assert f"inventories/{name}:{line}: " in message, message
    assert words in message, message


def test_error_in_a_group_vars_file_names_that_file(tmp_path: Path) -> None:
    write(tmp_path, "group_vars/npu.yml", "# rack NICs\nhccl_socket_ifname: eth0\nansible_port: twenty-two\n")
    path = write(tmp_path, "inv.yml", "hosts: {a: {}}\ngroups:\n  npu: {hosts: [a]}\n")
    message = load_error(path)
    assert "group_vars/npu.yml:3: " in message and "port 'twenty-two'" in message


def test_bad_yaml_in_a_host_vars_file_names_that_file(tmp_path: Path) -> None:
    write(tmp_path, "host_vars/a.yml", "x: 1\ny: [\n")
    message = load_error(write(tmp_path, "inv.yml", "hosts: {a: {}}\n"))
    assert "host_vars/a.yml:3: invalid YAML" in message


def test_relative_error_paths_when_under_the_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "inventories/bad.yml", "hosts:\n  a: {}\n  b: {connection: telnet}\n")
    monkeypatch.chdir(tmp_path)
    message = load_error(path)
    assert message.startswith("inventories/bad.yml:3: host b: unknown connection 'telnet'")


def test_a_var_remembers_the_line_that_set_it(tmp_path: Path) -> None:
    path = write(tmp_path, "inv.yml", """
        vars:
          stack: cpu
        hosts:
          a: {}
          b: {stack: nvidia-cuda12.4}
        groups:
          g:
            hosts: [a]
            vars: {stack: ascend-910b-cann8.1.rc1}
        """)
    inv = load_inventory(str(path))
    assert inv.hosts["a"].where_of("stack").endswith("inv.yml:9")  # the group's vars win over the top level
    assert inv.hosts["b"].where_of("stack").endswith("inv.yml:5")
    assert inv.hosts["b"].where_of("no_such_var") == inv.hosts["b"].source


def test_top_level_hosts_written_as_a_list_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "inv.yml", "vars: {stack: cpu}\nhosts:\n  - n1\n  - n2\n")
    message = load_error(path)
    assert "inv.yml:2: " in message and "not a list" in message


def test_one_big_group_keeps_inventory_order_and_each_member_once(tmp_path: Path) -> None:
    names = [f"n{i:05d}" for i in range(3000, 0, -1)]  # not in sorted order
    hosts = "".join(f"{n} ansible_host=10.0.{i // 250}.{i % 250 + 1}\n" for i, n in enumerate(names))
    path = write(tmp_path, "big.ini", "[all]\n" + hosts + "[g]\n" + hosts + "".join(f"{n}\n" for n in names[:10]))
    inv = load_inventory(str(path))
    assert [h.name for h in inv.select("g")] == names
    assert len(inv.groups["g"].hosts) == len(names)


def test_a_number_written_as_text_is_the_number_and_a_shared_value_is_checked_once(tmp_path: Path) -> None:
    path = write(tmp_path, "inv.ini", """
        [gpu]
        n[1:3]
        [gpu:vars]
        expect_devices="8"
        checkpoint_fs=lustre
        accelerator=910
        """)
    inv = load_inventory(str(path))
    assert {host.vars["expect_devices"] for host in inv.hosts.values()} == {8}
    assert inv.hosts["n1"].vars["checkpoint_fs"] == ["lustre"]  # one filesystem reads as a list of one
    assert inv.hosts["n1"].vars["accelerator"] == "910"


def test_a_bad_var_in_group_vars_names_its_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "inv.yml", "hosts: {a: {}}\ngroups:\n  gpu: {hosts: [a]}\n")
    write(tmp_path, "group_vars/gpu.yml", "stack: cpu\nexpect_devices: eight\n")
    assert "group_vars/gpu.yml:2: expect_devices: 'eight' is not a whole number" in load_error(path)


def test_every_var_the_host_config_reads_as_a_number_is_in_the_table() -> None:
    """validate/config.py and the cluster checks read these as numbers; each must be checked at load time."""
    from accelstack.engines.slurm.nodes import NODE_VARS
    from accelstack.inventory.vartypes import HOST_VARS, Numeric

    numeric = {"expect_devices", "checkpoint_size_gb", "collective_timeout_s", "storage_probe_mb", "min_shm_gb",
               "nproc_per_node", "health_xid_window_s", "validate_iters", "validate_warmup",
               "validate_size_budget_s", "cluster_iters", "cluster_warmup", "cluster_size_budget_s", "cluster_nproc",
               "rendezvous_port", "multinode_deadline_s", "ssh_keepalive_s", "node_keep_runs"}
    assert numeric <= {name for name, kind in HOST_VARS.items() if isinstance(kind, Numeric)}
    # Every var a node's checks read (what travels with a Slurm step) has a type here.
    assert set(NODE_VARS) <= set(HOST_VARS)


def test_three_thousand_nested_groups_load_in_either_order(tmp_path: Path) -> None:
    """A chain of 3000 groups (each the child of the next) was a RecursionError when listed child first."""
    lines = ["[g3000]", "h1"] + [line for i in range(2999, -1, -1) for line in (f"[g{i}:children]", f"g{i + 1}")]
    path = tmp_path / "deep.ini"
    path.write_text("\n".join(lines) + "\n")
    inv = load_inventory(str(path))
    assert names(inv.select("g0")) == ["h1"]
    assert inv.hosts["h1"].groups[:2] == ("g0", "g1")  # parents before children


def test_more_hosts_than_an_inventory_holds_are_refused_where_the_limit_is_crossed(tmp_path: Path) -> None:
    path = tmp_path / "two.ini"
    path.write_text("[a]\nn[0:150000]\n[b]\nm[0:150000]\n")
    assert "two.ini:4: host m49999 would be host 200,001; an inventory holds at most 200,000" in load_error(path)


def test_a_limit_with_a_huge_range_is_refused_before_expanding() -> None:
    inv = load_inventory()
    with pytest.raises(InventoryError, match="stands for 99,999,999 hosts"):
        inv.select("n[1:99999999]")
