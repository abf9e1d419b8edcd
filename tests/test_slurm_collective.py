"""The multi-node allreduce through Slurm, without Slurm: the step's output as srun prints it (a real capture from the
lab's slurmd, tests/data/slurm/), srun's own failure lines, every verdict a node can get, isolation over simulated
steps, the worker's rendezvous from Slurm's environment, and Slurm node names mapped to inventory hosts. The lab
tests (test_slurm_lab.py) run the same code through real slurmctld/slurmd."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from accelstack.engines.slurm.collective import (
    SlurmCollective,
    StepResult,
    collective_command,
    failed_nodes,
    multinode_slurm,
    node_record,
    parse_collective_output,
    step_time_limit,
)
from accelstack.engines.slurm.node import node_collective_config
from accelstack.engines.slurm.nodes import decode_node_vars, encode_node_vars, map_node_names, short_name
from accelstack.engines.slurm.parse import common_gres, gres_request, parse_gres_count
from accelstack.engines.slurm.run import step_command
from accelstack.flows.fleetcheck.run import drain_targets
from accelstack.validate.thresholds import load_thresholds

from .helpers import load_validator, run_cli

DATA = Path(__file__).resolve().parent / "data" / "slurm"
NODES = ["lab1", "lab2", "lab3", "lab4"]
CAPTURE = (DATA / "multinode-4x2.stdout").read_text()
LAUNCH_FAILURE = (DATA / "launch-failure.stderr").read_text()


def step(stdout: str = CAPTURE, stderr: str = "", *, code: int = 0, timed_out: bool = False,
         nodes: list[str] | None = None) -> StepResult:
    names = nodes or NODES
    outcomes, _ = parse_collective_output(stdout, names)
    return StepResult(names, outcomes, ["srun", "..."], code, stderr, 12.5, 60.0, timed_out, "accelstack-run-t", 2)


def test_the_captured_step_gives_every_node_its_result_and_its_node_line() -> None:
    outcomes, other = parse_collective_output(CAPTURE, NODES)
    assert sorted(outcomes) == NODES
    for name, outcome in outcomes.items():
        assert outcome.passed, name
        assert outcome.info["accelerator"] == "cpu" and outcome.info["name"] == name
        assert outcome.checks[0]["metrics"]["ranks"] == 8  # 4 nodes x 2 tasks, every rank's sum checked
        assert outcome.checks[0]["evidence"]["host"] == name
    assert {o.checks[0]["metrics"]["node_rank"] for o in outcomes.values()} == {0, 1, 2, 3}
    assert other == []


def test_a_result_srun_forwarded_in_chunks_is_joined() -> None:
    line = next(ln for ln in CAPTURE.splitlines() if ln.startswith("2: {\"checks\""))
    body = line[3:]
    cut = CAPTURE.replace(line, f"2: {body[:150]}\n2: {body[150:]}")
    outcomes, _ = parse_collective_output(cut, NODES)
    assert outcomes["lab2"].passed and outcomes["lab2"].busbw == pytest.approx(0.1455)


def test_srun_names_the_node_it_could_not_launch_on() -> None:
    assert failed_nodes(LAUNCH_FAILURE, NODES) == ["lab4"]
    # reference/slurm-lab.md 8: a node that fails during the prolog.
    assert failed_nodes("srun: error: Node failure on lab2\nsrun: error: Nodes lab[1-4] are still not ready\n",
                        NODES) == ["lab2"]
    assert failed_nodes("srun: error: lab3: task 2: Killed\n", NODES) == []


def test_healthy_nodes_pass_against_the_cpu_floor_taken_from_the_node_line() -> None:
    result = step()
    record = node_record(result, "lab3", accelerator=None, thresholds=load_thresholds())
    assert record.status == "pass", record.summary
    assert record.metrics["threshold_gbps"] == 0.05 and record.metrics["busbw_gbps"] == pytest.approx(0.1455)
    assert [s["bytes"] for s in record.metrics["sizes"]] == [1 << 16, 1 << 20, 1 << 22]
    assert record.evidence["engine"] == "slurm" and record.evidence["run_tag"] == "accelstack-run-t"


def test_busbw_under_the_floor_fails() -> None:
    floor = load_thresholds().with_overrides([{"accelerator": "cpu", "scope": "multi-node", "collective": "allreduce",
                                               "min_busbw_gbps": 5.0}])
    record = node_record(step(), "lab1", accelerator="cpu", thresholds=floor)
    assert record.status == "fail" and record.remedy


def test_wrong_sums_fail_and_a_rank_that_could_not_run_is_error() -> None:
    script = load_validator("collectives")
    rows = [{"collective": "multinode", "bytes": 4096, "iters": 4, "time_us": 10.0, "algbw_gbps": 0.4,
             "busbw_gbps": 0.7}]
    wrong = script.summarize("multinode", rows, 8, [5], [{"collective": "multinode", "bytes": 4096,
                                                         "wrong_elements": 1024, "rank": 5}])
    broken = script.result("multinode", "error", "rank 2 on lab2 could not run the collective: RuntimeError: x",
                           {"rank": 2}, {"host": "lab2"})
    text = CAPTURE
    for name, check in (("lab1", wrong), ("lab2", broken)):
        line = next(ln for ln in text.splitlines() if f'"host": "{name}"' in ln and '"checks"' in ln)
        label = line.split(":", 1)[0]
        text = text.replace(line, f"{label}: " + json.dumps({"checks": [check]}))
    result = step(text)
    assert node_record(result, "lab1", accelerator="cpu", thresholds=load_thresholds()).status == "fail"
    assert "wrong values on rank(s) 5" in result.reason("lab1")
    assert node_record(result, "lab2", accelerator="cpu", thresholds=load_thresholds()).status == "error"


def test_no_result_is_error_whether_slurm_lost_the_node_or_the_deadline_passed() -> None:
    only_three = "\n".join(ln for ln in CAPTURE.splitlines() if '"lab4"' not in ln)
    lost = step(only_three, LAUNCH_FAILURE, code=1)
    record = node_record(lost, "lab4", accelerator="cpu", thresholds=load_thresholds())
    assert record.status == "error" and "Slurm could not run the step on lab4" in record.summary
    late = step("", "srun: error: *** STEP 7.0 ON lab1 CANCELLED AT 2026-11-24T07:51:03 DUE TO TIME LIMIT ***\n",
                code=1, timed_out=True)
    record = node_record(late, "lab2", accelerator="cpu", thresholds=load_thresholds())
    assert record.status == "error" and "no result within the 60 s deadline" in record.summary


def test_the_step_command_is_one_srun_with_a_time_limit_and_the_ranks_per_node() -> None:
    argv = collective_command(NODES, ntasks_per_node=8, spec={"deadline_s": 90}, partition="gpu", time_limit_s=90,
                              tag="accelstack-run-x", command="/opt/accelstack/bin/accelstack")
    assert argv[0] == "srun" and "--nodes=4" in argv and "--ntasks-per-node=8" in argv and "--ntasks=32" in argv
    assert "--nodelist=lab1,lab2,lab3,lab4" in argv and "--time=1:30" in argv and "--partition=gpu" in argv
    assert "--kill-on-bad-exit=1" in argv and "--job-name=accelstack-run-x" in argv
    assert argv[-4:-1] == ["/opt/accelstack/bin/accelstack", "node-collective", "--spec"]
    assert json.loads(argv[-1]) == {"deadline_s": 90}
    assert step_time_limit(30) == "1:00" and step_time_limit(150.2) == "2:31"


def test_both_steps_take_their_nodes_whole_and_ask_for_the_nodes_devices_only_when_slurm_manages_some() -> None:
    # Under ConstrainDevices=yes a step that asks for no GRES sees no device; without --exclusive a user job shares
    # the node with the bandwidth checks.
    plain = collective_command(NODES, ntasks_per_node=2, spec={}, partition=None, time_limit_s=60, tag="t")
    host = step_command(NODES, tier="quick", only=None, partition=None, time_limit_min=2)
    for argv in (plain, host):
        assert "--exclusive" in argv and not any(a.startswith(("--gres", "--gpus")) for a in argv)
        assert argv.index("--exclusive") < argv.index("accelstack")  # srun's option, not node-check's
    gpus = collective_command(NODES, ntasks_per_node=8, spec={}, partition=None, time_limit_s=60, tag="t",
                              gres="gpu:h100:8")
    npus = step_command(NODES, tier="quick", only=None, partition=None, time_limit_min=2, gres="npu:8")
    assert "--gres=gpu:h100:8" in gpus and gpus.index("--gres=gpu:h100:8") < gpus.index("accelstack")
    assert "--gres=npu:8" in npus and "--exclusive" in gpus and "--exclusive" in npus
    # The health tier loads nothing: no need for the nodes whole, but the devices still (to be seen at all).
    health = step_command(NODES, tier="health", only=None, partition=None, time_limit_min=1, gres="gpu:h100:8")
    assert "--exclusive" not in health and "--gres=gpu:h100:8" in health and health[-2:] == ["--tier", "health"]


def test_the_gres_a_step_asks_for_is_the_nodes_devices_as_slurm_reports_them() -> None:
    assert gres_request("gpu:h100:8(S:0-1)") == "gpu:h100:8" and gres_request("npu:8") == "npu:8"
    assert gres_request("gpu:8(S:0),shard:4") == "gpu:8" and gres_request("(null)") is None
    assert gres_request("") is None and gres_request("shard:4") is None
    assert common_gres(["gpu:h100:8(S:0-1)", "gpu:h100:8(S:0-1)"]) == "gpu:h100:8"
    assert common_gres(["gpu:h100:8", "gpu:a100:4"]) == "gpu:4"  # every node can give four
    assert common_gres(["gpu:8", "(null)"]) is None and common_gres([]) is None


def test_the_node_config_keeps_the_node_settings_and_takes_the_step_deadline_and_sweep() -> None:
    base = {"vendor": "cpu", "accelerator": "cpu", "socket_ifnames": {"GLOO_SOCKET_IFNAME": "eth0"},
            "collective_timeout_s": 600.0}
    config = node_collective_config(base, {"deadline_s": 40, "run_tag": "t", "pair": True,
                                           "node_addrs": {"lab1": "10.0.0.1"}})
    assert config["mode"] == "cluster" and config["deadline_s"] == 37 and config["collective_timeout_s"] == 32
    assert config["sizes"] == [1 << 22] and config["node_addrs"] == {"lab1": "10.0.0.1"}
    assert config["socket_ifnames"] == {"GLOO_SOCKET_IFNAME": "eth0"}


class SimulatedFleet(SlurmCollective):
    """Steps answered from the capture: a group holding ``slow`` runs at a thousandth of the bandwidth; a node in
    ``lost`` is one srun cannot launch on."""

    def __init__(self, slow: str | None = None, lost: str | None = None) -> None:
        super().__init__(ntasks_per_node=2, partition=None, node_addrs={}, accelerator="cpu",
                         thresholds=load_thresholds(),
                         usable=lambda names: {n for n in names if n != lost})
        self.slow, self.lost, self.groups = slow, lost, []  # type: ignore[var-annotated]

    def step(self, nodes: Any, *, deadline_s: float, pair: bool = False) -> StepResult:
        self.groups.append(tuple(nodes))
        outcomes, _ = parse_collective_output(CAPTURE, NODES)
        result = step(CAPTURE, nodes=list(nodes))
        result.outcomes = {n: copy.deepcopy(outcomes[n]) for n in nodes}
        if self.lost in nodes:
            result.stderr, result.returncode = LAUNCH_FAILURE, 1
            for outcome in result.outcomes.values():
                outcome.checks = []
        elif self.slow in nodes:
            for outcome in result.outcomes.values():
                outcome.checks[0]["metrics"]["busbw_gbps"] = 0.0001
        return result


def test_a_slow_node_is_bisected_over_slurm_steps_and_named() -> None:
    fleet = SimulatedFleet(slow="lab3")
    records = {r.host: r for r in multinode_slurm(NODES, fleet, deadline_s=60)}
    assert records["lab3"].status == "fail" and "at fault: lab3" in records["lab3"].summary
    assert all(records[n].status == "warn" for n in ("lab1", "lab2", "lab4"))
    assert records["lab1"].evidence["isolation"]["engine"] == "slurm"
    assert fleet.groups[0] == tuple(NODES) and len(fleet.groups) <= 1 + 3  # ceil(log2 4) + 1 extra steps
    assert drain_targets(list(records.values()), []).keys() == {"lab3"}


def test_a_node_slurm_lost_is_error_never_drained_and_the_others_are_shown_good() -> None:
    fleet = SimulatedFleet(lost="lab4")
    records = {r.host: r for r in multinode_slurm(NODES, fleet, deadline_s=60)}
    assert records["lab4"].status == "error" and "lost under Slurm" in records["lab4"].summary
    assert all(records[n].status == "warn" and "lab4" in records[n].summary for n in ("lab1", "lab2", "lab3"))
    assert fleet.groups[1] == ("lab1", "lab2", "lab3")  # the live nodes, together, once
    assert drain_targets(list(records.values()), []) == {}


def test_one_node_is_skip() -> None:
    (record,) = multinode_slurm(["lab1"], SimulatedFleet(), deadline_s=60)
    assert record.status == "skip" and "one node" in record.summary


# ----- the worker's side (host-side script, Python 3.6) -----------------------------------------------------

def test_the_worker_expands_hostlists_and_derives_one_port_per_step() -> None:
    script = load_validator("collectives")
    assert script.expand_hostlist("lab[1-3,5],gpu07,n[08-10]") == ["lab1", "lab2", "lab3", "lab5", "gpu07", "n08",
                                                                  "n09", "n10"]
    assert script.slurm_port("41", "0") == script.slurm_port(41, 0)
    assert script.slurm_port("41", "0") != script.slurm_port("41", "1") != script.slurm_port("42", "0")
    assert 20000 <= script.slurm_port("999999", "3") < 30000


def test_the_worker_takes_torchruns_variables_from_slurms(monkeypatch: pytest.MonkeyPatch) -> None:
    script = load_validator("collectives")
    # No scontrol here: the first node comes from the worker's own hostlist expansion.
    monkeypatch.setattr(script, "first_node", lambda text: script.expand_hostlist(text)[0])
    env = {"SLURM_PROCID": "5", "SLURM_NTASKS": "8", "SLURM_LOCALID": "1", "SLURM_NODEID": "2",
           "SLURM_NTASKS_PER_NODE": "2(x4)", "SLURM_STEP_NODELIST": "lab[1-4]", "SLURM_JOB_ID": "17",
           "SLURM_STEP_ID": "0"}
    got = script.slurm_rendezvous({"node_addrs": {"lab1": "10.214.0.11"}}, env)
    assert got == {"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "NODE_RANK": "2", "LOCAL_WORLD_SIZE": "2",
                   "MASTER_ADDR": "10.214.0.11", "MASTER_PORT": str(script.slurm_port("17", "0"))}


# ----- names and vars from an inventory ---------------------------------------------------------------------

def test_slurm_names_map_to_inventory_hosts_by_var_then_name_then_short_hostname() -> None:
    hosts = {"rack1-a": ("10.0.0.1", "lab1"), "lab2": ("10.0.0.2", None), "x3": ("lab3.dc1.example", None),
             "gpu09.dc1.example": ("10.0.0.9", None)}
    assert map_node_names(["lab1", "lab2", "lab3", "gpu09", "lab7"], hosts) == {
        "lab1": "rack1-a", "lab2": "lab2", "lab3": "x3", "gpu09": "gpu09.dc1.example"}
    assert short_name("10.0.0.9") == "10.0.0.9"


def test_node_vars_travel_once_per_distinct_set_and_each_node_reads_its_own() -> None:
    text = encode_node_vars({"lab1": {"stack": "cpu", "gloo_socket_ifname": "eth0", "user": "root"},
                             "lab2": {"stack": "cpu", "gloo_socket_ifname": "eth0"},
                             "lab3": {"stack": "cpu", "gloo_socket_ifname": "ib9"}})
    doc = json.loads(text)
    assert len(doc["sets"]) == 2  # `user` is no node var: lab1 and lab2 share one set
    assert doc["nodes"] == {"lab3": 1}  # the set most nodes have is the default; only the others are named
    assert decode_node_vars(text, "lab3") == {"stack": "cpu", "gloo_socket_ifname": "ib9"}
    assert decode_node_vars(text, "lab1") == decode_node_vars(text, "lab2") == {"stack": "cpu",
                                                                                "gloo_socket_ifname": "eth0"}
    assert decode_node_vars(None, "lab1") == {} and decode_node_vars("", "lab1") == {}
    # What a control side that named every node sent: a node it did not name has no vars.
    assert decode_node_vars('{"sets": [{"stack": "cpu"}], "nodes": {"lab1": 0}}', "lab9") == {}


def test_node_vars_stay_small_at_any_fleet_size_and_too_many_sets_are_exit_3_before_srun() -> None:
    from accelstack.engines.slurm.nodes import NODE_VARS_ENV, node_vars_env
    from accelstack.errors import ConfigError

    # Every node named made the variable grow with the fleet, past the 128 KiB Linux gives one (srun: E2BIG).
    fleet = {f"gpu{i:05d}": {"stack": "cpu", "gloo_socket_ifname": "eth0"} for i in range(20000)}
    fleet["gpu00007"] = {"stack": "cpu", "gloo_socket_ifname": "ib9"}
    text = node_vars_env(fleet)[NODE_VARS_ENV]
    assert len(text) < 200
    assert decode_node_vars(text, "gpu19999")["gloo_socket_ifname"] == "eth0"
    assert decode_node_vars(text, "gpu00007")["gloo_socket_ifname"] == "ib9"
    assert node_vars_env({"n1": {}, "n2": {"user": "root"}}) == {}  # no node var anywhere: nothing sent
    varied = {f"n{i}": {"gloo_socket_ifname": f"eth{i}"} for i in range(9000)}
    with pytest.raises(ConfigError, match="one environment variable holds 128 KiB"):
        node_vars_env(varied)


@pytest.mark.parametrize("value", ["{bad", "[]", '{"sets": 3, "default": 0, "nodes": {}}',
                                   '{"sets": [1], "default": 0, "nodes": {}}', '{"sets": [], "nodes": {"lab1": 0}}',
                                   '{"sets": [{}], "nodes": {"lab1": "0"}}'])
def test_node_vars_that_are_not_what_validate_sends_are_bad_input_naming_the_variable(value: str) -> None:
    from accelstack.errors import ConfigError

    with pytest.raises(ConfigError, match="^ACCELSTACK_NODE_VARS is not"):
        decode_node_vars(value, "lab1")


@pytest.mark.parametrize("command", ["node-check", "node-collective"])
def test_a_bad_node_vars_variable_is_one_line_and_exit_3_on_the_node(command: str, tmp_path: Path) -> None:
    # It was silently ignored: the node was judged by its node file alone, not the inventory's vars it was sent.
    from tests.test_nodecheck import rendered_node_file


    node_file = rendered_node_file(tmp_path, gloo_socket_ifname="eth0")
    extra = ["--spec", "{}"] if command == "node-collective" else ["--json"]
    proc = run_cli(command, "--config", str(node_file), *extra,
                   env={"ACCELSTACK_NODE_VARS": "{bad", "ACCELSTACK_RUNS": str(tmp_path / "runs")}, timeout=120)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert proc.stderr.startswith("accelstack: ACCELSTACK_NODE_VARS is not JSON")
    assert not (tmp_path / "runs").exists()  # refused before any check ran


@pytest.mark.parametrize(("spec", "says"), [
    ('{"deadline_s": "x"}', "deadline_s must be a number of seconds above 0, not 'x'"),
    ('{"deadline_s": -5}', "deadline_s must be a number"), ('{"deadline_s": true}', "deadline_s must be a number"),
    ("[60]", "must be a JSON object"), ("{", "is not JSON"), ('{"pair": "yes"}', "pair must be true or false"),
    ('{"run_tag": 7}', "run_tag must be a string"), ('{"node_addrs": ["lab1"]}', "node_addrs must map"),
])
def test_a_bad_collective_spec_is_one_line_and_exit_3(spec: str, says: str, tmp_path: Path) -> None:

    proc = run_cli("node-collective", "--spec", spec, "--config", str(tmp_path / "none.yml"), timeout=120)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert says in proc.stderr  # the spec is judged before the node file (which does not exist here) is read


def test_gres_counts_set_the_ranks_per_node() -> None:
    assert parse_gres_count("gpu:8") == 8 and parse_gres_count("gpu:h100:8(S:0-1)") == 8
    assert parse_gres_count("shard:4,npu:16") == 16 and parse_gres_count("(null)") == 0


def test_the_inventory_vars_sent_with_a_step_override_the_node_file(tmp_path: Path) -> None:
    from accelstack.engines.node import load_node_file
    from accelstack.engines.slurm.node import apply_control_vars
    from accelstack.engines.slurm.nodes import NODE_VARS_ENV
    from tests.test_nodecheck import rendered_node_file

    node = load_node_file(rendered_node_file(tmp_path, gloo_socket_ifname="eth0"))
    assert node.vars["gloo_socket_ifname"] == "eth0"
    sent = encode_node_vars({"node1": {"gloo_socket_ifname": "ib9", "expect_devices": 8, "env": {"X": "1"}},
                             "node2": {"gloo_socket_ifname": "eth0"}})
    applied = apply_control_vars(node, "node1", {NODE_VARS_ENV: sent})
    assert applied["gloo_socket_ifname"] == "ib9"
    assert node.vars["gloo_socket_ifname"] == "ib9" and node.vars["expect_devices"] == 8
    assert node.vars["env"]["X"] == "1" and len(node.vars["env"]) > 1  # merged into the stack's env, not over it
    untouched = load_node_file(rendered_node_file(tmp_path, gloo_socket_ifname="eth0"))
    assert apply_control_vars(untouched, "node1", {}) == {} and untouched.vars["gloo_socket_ifname"] == "eth0"


def test_a_slurm_node_no_inventory_host_matches_is_exit_3(tmp_path: Path) -> None:
    from accelstack.engines.slurm.nodes import inventory_contexts
    from accelstack.errors import ConfigError
    from accelstack.inventory import load_inventory

    path = tmp_path / "fleet.yml"
    path.write_text("vars: {stack: cpu}\nhosts:\n  rack1-a: {address: 10.0.0.1, slurm_node: lab1}\n"
                    "  lab2: {address: 10.0.0.2}\n")
    inv = load_inventory(str(path))
    contexts = inventory_contexts(inv, inv.select(None), ["lab1", "lab2"])
    assert contexts["lab1"].host.name == "rack1-a" and contexts["lab2"].host.name == "lab2"
    with pytest.raises(ConfigError, match=r"Slurm node\(s\) lab9 match no host of .*fleet.yml"):
        inventory_contexts(inv, inv.select(None), ["lab1", "lab9"])


def test_a_node_whose_every_isolation_run_failed_is_not_warned_as_good_beside_a_lost_node() -> None:
    class LostAndEveryRunSlow(SimulatedFleet):
        def step(self, nodes: Any, *, deadline_s: float, pair: bool = False) -> StepResult:
            result = super().step(nodes, deadline_s=deadline_s, pair=pair)
            if self.lost not in nodes:
                for outcome in result.outcomes.values():
                    outcome.checks[0]["metrics"]["busbw_gbps"] = 0.0001
            return result

    records = {r.host: r for r in multinode_slurm(NODES, LostAndEveryRunSlow(lost="lab4"), deadline_s=60)}
    assert records["lab4"].status == "error"
    for name in ("lab1", "lab2", "lab3"):  # every run they were in was under the floor: never "passed its other runs"
        assert records[name].status != "warn" and "passed its other runs" not in records[name].summary, name


def test_an_isolation_step_slurm_could_not_allocate_blames_no_node() -> None:
    class BusyAfterTheFleetStep(SimulatedFleet):
        """lab3 is slow; once the fleet step ran, another job holds lab1: srun --immediate cannot allocate it."""

        def step(self, nodes: Any, *, deadline_s: float, pair: bool = False) -> StepResult:
            result = super().step(nodes, deadline_s=deadline_s, pair=pair)
            if len(self.groups) > 1 and "lab1" in nodes:
                result.stderr = "srun: error: Unable to allocate resources: Requested nodes are busy\n"
                result.returncode = 1
                for outcome in result.outcomes.values():
                    outcome.checks, outcome.info = [], {}
            return result

    records = {r.host: r for r in multinode_slurm(NODES, BusyAfterTheFleetStep(slow="lab3"), deadline_s=60)}
    assert records["lab1"].status == "fail" and "at fault" not in records["lab1"].summary  # the measured floor fail
    assert all("Requested nodes are busy" in r.summary for r in records.values())
    assert all(r.metrics["at_fault"] == [] for r in records.values())
    assert records["lab1"].evidence["isolation"]["stopped"].startswith("the step over lab1")


def test_sinfo_failing_after_the_step_keeps_the_records_instead_of_raising_bad_input() -> None:
    from accelstack.errors import ConfigError

    def no_controller(names: Any) -> set[str]:
        raise ConfigError("sinfo exited 1: sinfo: error: Unable to contact slurm controller (connect failure)")

    fleet = SimulatedFleet(slow="lab3")
    fleet.usable = no_controller
    records = {r.host: r for r in multinode_slurm(NODES, fleet, deadline_s=60)}
    assert sorted(records) == NODES and len(fleet.groups) == 1  # the step's records, and no isolation
    assert all(r.status == "fail" and "Unable to contact slurm controller" in r.summary for r in records.values())


def test_a_client_commands_stderr_becomes_one_line() -> None:
    from accelstack.engines.slurm.parse import last_line

    assert last_line("sinfo: error: a\n\nsinfo: fatal:   no  config \n") == "sinfo: fatal: no config"
    assert last_line("") == "no output" and last_line("  \n", "it names no node") == "it names no node"


class _Reads(dict):
    """A host's vars that remember every name read from them."""

    def __init__(self) -> None:
        super().__init__()
        self.read: set[str] = set()

    def get(self, key: Any, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)

    def __getitem__(self, key: Any) -> Any:
        self.read.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self.read.add(str(key))
        return super().__contains__(key)


@pytest.mark.parametrize("stack", ["cpu", "nvidia-cuda12.8", "ascend-910b-cann8.1.rc1"])
def test_every_inventory_var_a_node_reads_travels_with_the_step(stack: str) -> None:
    # A var the node's checks read but the step does not carry is silently the node file's, not the inventory's
    # (nproc_per_node was: single-node collectives under Slurm ignored the inventory's value).
    from accelstack.engines.slurm.nodes import NODE_VARS
    from accelstack.inventory import Host
    from accelstack.stacks import load_stack
    from accelstack.stacks.context import HostContext
    from accelstack.validate.config import host_config

    reads = _Reads()
    ctx = HostContext(Host(name="node1", address="localhost", connection="local"), load_stack(stack), reads)
    host_config(ctx, tier="standard")
    assert ctx.python and ctx.backend
    reads.get("thresholds")  # what node-check judges by (nodecheck.run_node_check)
    assert {"nproc_per_node", "stack_python", "validate_sizes", "cluster_nproc"} <= reads.read
    assert reads.read - set(NODE_VARS) == set()


def test_both_steps_read_srun_label_output_with_one_parser_that_joins_a_tasks_chunks() -> None:
    from accelstack.engines.slurm import collective, parse

    record = json.dumps({"host": "lab2", "check": "devices", "status": "pass", "summary": "ok"})
    text = f"1: {record[:20]}\n0: srun: a note\n1: {record[20:]}\n0: {{\"accelstack_node\": {{\"name\": \"lab1\"}}}}\n"
    items, other = parse.parse_step_output(text)
    assert items == [json.loads(record)] and other == ["0: srun: a note", '0: {"accelstack_node": {"name": "lab1"}}']
    documents, rest = parse.labelled_documents(text)
    assert documents == [("1", json.loads(record)), ("0", {"accelstack_node": {"name": "lab1"}})]
    assert rest == ["0: srun: a note"]
    # The multi-node step's reader is the same parser, not a copy of it.
    assert collective.labelled_documents is parse.labelled_documents and collective.LABEL is parse.LABEL


# ----- the control side at fleet sizes, Slurm's clients replaying captured output -----------------------------

REPLAY_CLIENT = '''#!{python}
"""{tool} for a test: writes down how it was called, then prints what the real one printed on the lab (captured
in tests/data/slurm/), renamed for the test's nodes."""
import json, os, re, sys
from pathlib import Path
folder = Path(__file__).resolve().parent
with (folder / "calls.jsonl").open("a") as log:
    log.write(json.dumps({{"tool": "{tool}", "argv": sys.argv[1:],
                          "node_vars": os.environ.get("ACCELSTACK_NODE_VARS")}}) + "\\n")
nodes = (folder / "nodes.txt").read_text().split()
drained = set((folder / "drained.txt").read_text().split())
data = Path({data!r})
if "{tool}" == "sinfo":
    print("".join(f"{{n}} {{'drained' if n in drained else 'idle'}}\\n" for n in nodes), end="")
elif "{tool}" == "scontrol":
    lines = (data / "scontrol-show-node-4-lab3-drained.txt").read_text().splitlines()
    idle, down = lines[0], lines[2]  # lab1 idle; lab3 drained with its reason
    for n in nodes:
        line = down.replace("lab3", n) if n in drained else idle.replace("lab1", n)
        print(line)
elif "{tool}" == "srun":
    wanted = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--nodelist=")).split(",")
    one = [re.sub(r"^0: ", "", line) for line in (data / "health-1node.stdout").read_text().splitlines()]
    out = sys.stdout
    for task, name in enumerate(wanted):
        for line in one:
            out.write(f"{{task:>{{len(str(len(wanted) - 1))}}}}: " + line.replace('"host": "lab1"', f'"host": "{{name}}"')
                      + "\\n")
'''


def replay_clients(tmp_path: Path, nodes: list[str], drained: set[str]) -> Path:
    import sys

    folder = tmp_path / "slurm-bin"
    folder.mkdir()
    (folder / "nodes.txt").write_text("\n".join(nodes))
    (folder / "drained.txt").write_text("\n".join(sorted(drained)))
    for tool in ("sinfo", "scontrol", "srun", "scancel"):
        path = folder / tool
        path.write_text(REPLAY_CLIENT.format(python=sys.executable, tool=tool, data=str(DATA)))
        path.chmod(0o755)
    return folder


def test_a_fleet_run_asks_slurm_once_whatever_the_node_count_and_a_drained_node_gets_its_reason(
        tmp_path: Path) -> None:
    # A drained node's reason was one scontrol call for each such node, and sinfo was asked twice a run. Here 300
    # nodes, 30 drained: one sinfo, one scontrol, one srun; every other node's records come through, in full.
    import os


    nodes = [f"gpu{i:03d}" for i in range(1, 301)]
    drained = {n for i, n in enumerate(nodes) if i % 10 == 3}
    folder = replay_clients(tmp_path, nodes, drained)
    hosts = "".join(f"  {n}: {{address: 10.9.{i // 250}.{i % 250 + 1}}}\n" for i, n in enumerate(nodes))
    inventory = tmp_path / "fleet.yml"
    inventory.write_text("vars: {stack: cpu, expect_devices: 0, gloo_socket_ifname: eth0}\nhosts:\n" + hosts)
    env = {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}", "ACCELSTACK_RUNS": str(tmp_path / "runs")}
    proc = run_cli("validate", "--engine", "slurm", "--tier", "health", "--json", "--inventory", str(inventory),
                   env=env, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]  # the drained nodes could not be validated
    calls = [json.loads(line) for line in (folder / "calls.jsonl").read_text().splitlines()]
    assert [c["tool"] for c in calls] == ["sinfo", "scontrol", "srun"], [c["argv"] for c in calls]
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    one = len([line for line in (DATA / "health-1node.stdout").read_text().splitlines() if '"run_id"' in line])
    by_host: dict[str, list[dict]] = {}
    for record in records:
        by_host.setdefault(record["host"], []).append(record)
    assert sorted(by_host) == nodes
    assert all(len(by_host[n]) == one for n in nodes if n not in drained)
    for name in drained:
        assert {r["status"] for r in by_host[name]} == {"error"}
        assert all("drained (test: out for repair" in r["summary"] for r in by_host[name]), by_host[name][0]
    # One inventory, one set of vars: the variable the step carries names no node.
    sent = json.loads(calls[-1]["node_vars"])
    assert sent["nodes"] == {} and len(sent["sets"]) == 1 and sent["sets"][0]["gloo_socket_ifname"] == "eth0"
    assert f"--nodelist={','.join(n for n in nodes if n not in drained)}" in calls[-1]["argv"]


# ----- the engine with its Slurm client replaced, as the SSH engine's transport is ---------------------------

class ReplayClient:
    """Slurm's client commands for a test, in process: each call written down, each answer what the real command
    printed on the lab (tests/data/slurm/), for four nodes of which lab3 is drained."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.cancelled: list[str] = []
        self.node_vars: list[str | None] = []

    def run(self, argv: Any, *, timeout: float, env: Any = None) -> Any:
        from accelstack.engines.slurm.client import Completed

        argv = list(argv)
        self.calls.append(argv)
        if argv[0] == "sinfo":
            return Completed(argv, 0, "lab1 idle\nlab2 idle\nlab3 drained\nlab4 idle\n")
        if argv[:3] == ["scontrol", "-o", "show"]:
            return Completed(argv, 0, (DATA / "scontrol-show-node-4-lab3-drained.txt").read_text())
        if argv[:2] == ["scontrol", "update"]:
            return Completed(argv, 1, "", "slurm_update error: Invalid node name specified\n")
        raise AssertionError(f"unexpected command {argv}")

    def stream(self, argv: Any, *, timeout: float, on_line: Any, env: Any = None) -> Any:
        from accelstack.engines.slurm.client import Completed

        argv = list(argv)
        self.calls.append(argv)
        self.node_vars.append((env or {}).get("ACCELSTACK_NODE_VARS"))
        wanted = next(a.split("=", 1)[1] for a in argv if a.startswith("--nodelist=")).split(",")
        one = [line.removeprefix("0: ") for line in (DATA / "health-1node.stdout").read_text().splitlines()]
        for task, name in enumerate(wanted):
            for line in one:
                on_line(f"{task}: " + line.replace('"host": "lab1"', f'"host": "{name}"'))
        return Completed(argv, 0)

    def cancel(self, name: str) -> None:
        self.cancelled.append(name)


def test_the_slurm_engine_runs_every_command_through_its_client() -> None:
    from accelstack.engines.slurm.run import SlurmEngine, slurm_checks

    client = ReplayClient()
    engine = SlurmEngine.for_nodes("lab", None, client=client)
    records = engine.validate(slurm_checks("health", None), tier="health")
    tools = [call[0] if call[0] != "scontrol" else " ".join(call[:3]) for call in client.calls]
    assert tools == ["sinfo", "scontrol -o show", "srun"], client.calls
    srun = client.calls[-1]
    assert "--nodelist=lab1,lab2,lab4" in srun and "--partition=lab" in srun and srun[-3:] == ["--json", "--tier",
                                                                                               "health"]
    by_host: dict[str, list[Any]] = {}
    for record in records:
        by_host.setdefault(record.host, []).append(record)
    assert sorted(by_host) == NODES
    # The drained node is not asked: an error per check, with Slurm's own reason; the others' records came back.
    assert {r.status for r in by_host["lab3"]} == {"error"} and "drained" in by_host["lab3"][0].summary
    assert all(r.status != "error" for name in ("lab1", "lab2", "lab4") for r in by_host[name])
    assert client.node_vars == [None]  # no inventory: nothing sent to the nodes
    # A drain goes through the same client: scontrol's answer is the drain's, never an exception.
    drained = engine.drain("lab2", "accelstack: devices failed")
    assert client.calls[-1] == ["scontrol", "update", "nodename=lab2", "state=drain",
                                "reason=accelstack: devices failed"]
    assert not drained.ok and drained.exit_status == 1 and "Invalid node name" in drained.output
