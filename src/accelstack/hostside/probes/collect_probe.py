# accelstack support-bundle collector: runs on the host with its python3 (stdlib only, Python 3.6+).
#
# Prints ONE JSON document: {"collect": 1, "commands": {CMD: {"rc", "out", "err"[, "missing"]}},
# "files": {PATH: text|null}, "env": {NAME: value}}. Values of environment variables whose name contains KEY,
# TOKEN, SECRET or PASSWORD are masked here, on the host, so they never leave it. Nothing here raises: a
# missing tool is recorded as data.
import glob
import json
import os
import re
import subprocess
import sys

SECRET = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
MASK = "********"
TIMEOUT = 20


def run(argv, shell=False, timeout=TIMEOUT):
    try:
        proc = subprocess.Popen(argv, shell=shell, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    except OSError as exc:
        return {"rc": None, "out": "", "err": str(exc), "missing": True}
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, 9)
        except OSError:
            pass
        proc.communicate()
        return {"rc": None, "out": "", "err": "timed out after %ds" % timeout, "timeout": True}
    return {"rc": proc.returncode, "out": out.decode("utf-8", "replace"), "err": err.decode("utf-8", "replace")}


def mask_env_text(text):
    lines = []
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        lines.append(name + sep + MASK if sep and SECRET.search(name) else line)
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def npu_ids(listing):
    ids = sorted({int(m) for m in re.findall(r"NPU ID\s*:\s*(\d+)", listing)})
    if not ids:
        ids = sorted(int(p[len("/dev/davinci"):]) for p in glob.glob("/dev/davinci[0-9]*")
                     if p[len("/dev/davinci"):].isdigit())
    return ids


def read(path, limit=1 << 20):
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


def main():
    options = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    python = options.get("python") or "python3"
    commands = {}

    def record(cmd, argv=None, shell=False):
        commands[cmd] = run(argv or cmd.split(), shell=shell)
        return commands[cmd]

    listing = record("npu-smi info -l")
    for npu in npu_ids(listing.get("out", "")):
        record("npu-smi info -t board -i %d" % npu)
        record("hccn_tool -i %d -ip -g" % npu)
        record("hccn_tool -i %d -link -g" % npu)
    record("npu-smi info -m")
    record("nvidia-smi -q -x")
    record("nvidia-smi topo -m")
    record("lspci -nn")
    record("pip list", [python, "-m", "pip", "list", "--format=freeze", "--disable-pip-version-check"])
    dmesg = record("dmesg", ["dmesg", "--ctime"])
    if dmesg.get("rc") not in (0, None) or dmesg.get("missing"):
        dmesg = record("dmesg", ["dmesg"])
    dmesg["out"] = "\n".join(dmesg.get("out", "").splitlines()[-2000:])
    login_env = record("env (login shell)", ["bash", "-lc", "env"])
    login_env["out"] = mask_env_text(login_env.get("out", ""))
    env = dict((k, MASK if SECRET.search(k) else v) for k, v in os.environ.items())
    files = {}
    for path in ["/etc/profile.d/accelstack.sh", "/etc/hccn.conf", "/etc/ascend_install.info",
                 "/usr/local/Ascend/ascend-toolkit/set_env.sh"]:
        text = read(path)
        files[path] = mask_env_text(text) if text is not None and path.endswith(".sh") else text
    print(json.dumps({"collect": 1, "commands": commands, "files": files, "env": env}))


if __name__ == "__main__":
    try:
        main()
    except Exception as exc:
        print(json.dumps({"collect": 1, "fatal": "%s: %s" % (type(exc).__name__, exc)}))
