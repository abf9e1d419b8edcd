"""A small data-parallel training job on the CPU stack (torch + gloo) that fails in the way CASE names.

Run by provoke.sh under torchrun (or alone); each case is a real failure of a real job, provoked on purpose to
fill the diagnosis corpus. CASE=healthy trains to the end.
"""

from __future__ import annotations

import ctypes
import datetime
import logging
import os
import sys
import time
import warnings

import torch
import torch.distributed as dist

CASE = os.environ.get("CASE", "healthy")
STEPS = int(os.environ.get("STEPS", "6"))
TIMEOUT = datetime.timedelta(seconds=int(os.environ.get("PG_TIMEOUT_S", "20")))


def log(msg: str) -> None:
    print(f"[rank{os.environ.get('RANK', '0')}] {msg}", flush=True)


def main() -> None:
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if CASE == "missing-module":
        import apex  # noqa: F401  (the job's environment lacks it)
    if CASE == "missing-lib":
        ctypes.CDLL("libfused_layernorm_cuda.so")
    if CASE == "healthy-retry":
        load_shard_with_retries()
    if CASE in ("compile-fullgraph", "compile-no-compiler", "compile-graph-break"):
        compile_step()
    if CASE == "cuda-on-cpu-build":
        torch.zeros(4).cuda()
    if CASE == "hub-offline":
        fetch_tokenizer()
    if CASE == "weights-only":
        resume_train_state(rank)
    if CASE == "healthy-inductor-cache":
        compile_step()
    backend = "nccl" if CASE == "nccl-on-cpu-build" else "gloo"
    if CASE == "world-size-mismatch":  # the job hard-codes the world size of the launch it was written for
        dist.init_process_group(backend, timeout=TIMEOUT, world_size=4, rank=rank)
    else:
        dist.init_process_group(backend, timeout=TIMEOUT)
    if CASE == "init-twice":  # the job's trainer sets up distributed again after its launcher script did
        setup_distributed(backend)
    if CASE in ("ddp-unused", "ddp-shape-mismatch"):
        ddp_train(rank)
        return
    if CASE == "metrics-port" and rank == 0:
        serve_metrics()
    log(f"init {backend} world={world} torch={torch.__version__}")
    model = torch.nn.Linear(64, 8)
    if CASE in ("corrupt-checkpoint", "state-dict-mismatch"):
        model.load_state_dict(torch.load(os.environ["RESUME"]))
        log(f"resumed from {os.environ['RESUME']}")
    if CASE == "healthy-compile":
        model = torch.compile(model)  # type: ignore[assignment]
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    if CASE == "healthy-sched":
        torch.optim.lr_scheduler.StepLR(opt, step_size=2).step()  # before any opt.step(): torch warns
    if CASE == "healthy-storage":
        log(f"parameter storage holds {model.weight.storage().size()} floats")
    if CASE == "healthy":
        warnings.warn("torch.cuda.amp.GradScaler(args...) is deprecated. Please use "
                      "torch.amp.GradScaler('cuda', args...) instead.", FutureWarning, stacklevel=1)
    for step in range(STEPS):
        x = torch.randn(32 + step if CASE == "healthy-compile" else 32, 64)
        if CASE == "nan-anomaly" and step == 2 and rank == world - 1:
            with torch.autograd.detect_anomaly():
                out = model(x)
                loss = (out - out.detach().max()).sqrt().mean()  # sqrt of values <= 0
                loss.backward()
        else:
            loss = model(x).pow(2).mean()
            loss.backward()
        for p in model.parameters():
            assert p.grad is not None
            if CASE == "mismatch" and rank == 1:
                dist.all_reduce(torch.zeros(p.grad.numel() + 3))
            else:
                dist.all_reduce(p.grad)
        opt.step()
        opt.zero_grad()
        log(f"step {step} loss {loss.item():.4f}")
        time.sleep(float(os.environ.get("STEP_S", "0")))
        if CASE == "healthy-upload" and rank == 0:
            upload_metrics(step)
        if CASE == "save-shards" and rank == 0:
            torch.save(model.state_dict(), os.path.join(os.environ["CKPT_DIR"], f"step-{step:05d}.pt"))
        if CASE == "slow-save" and step == 2 and rank == 0:
            save_full_checkpoint(model)
        if step == 2 and rank == world - 1:
            fail_here(rank)
    if CASE == "save-big":
        torch.save({"w": torch.randn(1024, 1024)}, os.environ["CKPT"] + f".rank{rank}")
    if CASE == "save-full":
        torch.save({"w": torch.randn(1024, 1024)}, os.environ["CKPT"])
    dist.barrier()
    if CASE in ("healthy", "healthy-retry", "healthy-upload", "healthy-compile", "flaky", "save-full", "save-ro", "save-denied") and rank == 0:
        path = os.environ.get("CKPT", "/tmp/ckpt.pt")
        torch.save(model.state_dict(), path)
        log(f"saved checkpoint to {path}")
    dist.destroy_process_group()
    log("done")


def setup_distributed(backend: str) -> None:
    """The trainer's own set-up, as a library would write it without checking dist.is_initialized()."""
    log("trainer: setting up distributed")
    dist.init_process_group(backend, timeout=TIMEOUT)


class TwoHeads(torch.nn.Module):
    """A model with an auxiliary head the training loss does not use (DDP must be told about it)."""

    def __init__(self, out: int) -> None:
        super().__init__()
        self.body = torch.nn.Linear(64, out)
        self.aux = torch.nn.Linear(64, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def ddp_train(rank: int) -> None:
    """Train under DistributedDataParallel: with a head the loss never uses (ddp-unused), or with a model whose
    width each rank reads from its own copy of the config (ddp-shape-mismatch: rank 1's copy is another)."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    out = 16 if CASE == "ddp-shape-mismatch" and rank == 1 else 8
    model = DDP(TwoHeads(out))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(STEPS):
        loss = model(torch.randn(32, 64)).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        log(f"step {step} loss {loss.item():.4f}")
    dist.destroy_process_group()


def save_full_checkpoint(model: torch.nn.Module) -> None:
    """Rank 0 writes the full training state (weights and optimizer shards, fsynced) while the other ranks go on
    to the next step's all-reduce and wait for it there."""
    path = os.environ.get("CKPT_DIR", "/var/tmp")
    log(f"saving checkpoint step-2 to {path}")
    for shard in range(int(os.environ.get("SHARDS", "8"))):
        name = os.path.join(path, f"corpus-step-2-shard{shard}.pt")
        with open(name, "wb") as f:
            torch.save({"shard": shard, "state": torch.randn(64, 1024, 1024)}, f)
            f.flush()
            os.fsync(f.fileno())
        os.unlink(name)
    log("checkpoint saved")


def compile_step() -> None:
    """torch.compile on a step: with fullgraph a data-dependent branch cannot be traced; without a C++ compiler
    inductor cannot build the CPU kernel."""
    def step(x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.gelu(x) * 2
        if CASE in ("compile-fullgraph", "compile-graph-break") and y.sum() > 0:
            return y.cos()
        return y.sin()
    compiled = torch.compile(step, fullgraph=CASE == "compile-fullgraph")
    log(f"compiled step: {compiled(torch.randn(16, 16)).sum().item():.4f}")


def fetch_tokenizer() -> None:
    """Download the tokenizer the job starts from (a node without a route to the internet fails here)."""
    import urllib.request
    url = "https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/tokenizer.json"
    log(f"downloading {url}")
    with urllib.request.urlopen(url, timeout=10) as resp:
        log(f"tokenizer: {len(resp.read())} bytes")


class TrainState:
    """What the job keeps next to the weights in its checkpoint (a plain class, so pickle stores it by name)."""

    def __init__(self, step: int) -> None:
        self.step = step


def resume_train_state(rank: int) -> None:
    """Save a checkpoint with the training state in it, then resume from it as the job's restart does."""
    path = f"/tmp/corpus-resume-{os.getpid()}.pt"
    torch.save({"model": torch.nn.Linear(64, 8).state_dict(), "state": TrainState(step=1200)}, path)
    ckpt = torch.load(path)
    log(f"resumed at step {ckpt['state'].step}")


def serve_metrics() -> None:
    """Rank 0 serves its metrics for the cluster's scraper on a fixed port."""
    import http.server
    port = int(os.environ.get("METRICS_PORT", "9400"))
    server = http.server.HTTPServer(("0.0.0.0", port), http.server.SimpleHTTPRequestHandler)
    log(f"metrics on :{server.server_port}")


def upload_metrics(step: int) -> None:
    """Push the step's metrics to a tracking server that is down; the job logs it and trains on."""
    import socket
    logger = logging.getLogger("metrics")
    if not logger.handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        socket.create_connection(("127.0.0.1", 9), timeout=2).close()
    except OSError:
        logger.exception("could not push metrics for step %d to the tracking server; will retry next step", step)


def load_shard_with_retries() -> None:
    """Read a data shard that is not there on the first attempt (it is being written by another process, as a
    shard on a network filesystem can be); the loader logs the error with its traceback, waits and retries."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logger = logging.getLogger("data.loader")
    path = f"/tmp/corpus-shard-{os.getpid()}.bin"
    for attempt in range(1, 6):
        try:
            with open(path, "rb") as f:
                logger.info("read shard %s (%d bytes) on attempt %d", path, len(f.read()), attempt)
            os.unlink(path)
            return
        except FileNotFoundError:
            logger.warning("Error reading shard %s, retrying in 1s [Retry %d/5]", path, attempt, exc_info=True)
            with open(path, "wb") as f:
                f.write(b"\0" * 4096)
            time.sleep(1)


def fail_here(rank: int) -> None:
    if CASE == "raise":
        raise ValueError(f"expected a batch of 32 token ids, got shape {(32, 63)}")
    if CASE == "typeerror":
        batch = {"input_ids": torch.zeros(4)}
        batch.to("cpu")  # type: ignore[attr-defined]
    if CASE == "keyerror":
        config = {"lr": 0.01}
        print(config["warmup_steps"])
    if CASE == "segfault":
        ctypes.string_at(0)
    if CASE == "abort":
        os.abort()
    if CASE == "sigkill":
        os.kill(os.getpid(), 9)
    if CASE == "exit":
        sys.exit(3)
    if CASE == "hang":
        log("stalling in the data loader")
        if os.environ.get("PIDFILE"):
            with open(os.environ["PIDFILE"], "w") as f:
                f.write(str(os.getpid()))
        time.sleep(600)
    if CASE == "flaky" and not os.path.exists(os.environ["FLAKY_MARKER"]):
        open(os.environ["FLAKY_MARKER"], "w").close()
        raise ConnectionResetError(104, "Connection reset by peer: reading shard 3 from the object store")
    if CASE == "oom-host":
        held = [torch.ones(256, 1024, 1024) for _ in range(64)]  # 64 GiB, past any limit the case sets
        log(f"held {len(held)}")
    if CASE == "recursion":
        def walk(node: dict) -> int:
            return 1 + walk({"child": node})
        walk({})
    if CASE == "cpu-burn":
        log("computing the tokenizer statistics")
        a = torch.randn(512, 512)
        while True:
            a = torch.tanh(a @ a)
    if CASE == "filenotfound":
        with open("/data/shards/train-00017-of-00128.arrow", "rb") as f:
            f.read()


if __name__ == "__main__":
    main()
