#!/bin/bash
# Provoke real failures of a small training job on this machine's CPU stack (torch 2.13.0+cpu, gloo) and keep
# each one's console output (stdout and stderr together, as a user pastes it) as a corpus log.
#
#   bash provoke.sh OUTDIR [CASE...]      (root: some cases use mount namespaces, cgroups, capsh)
#
# Every case is a real run: the job really raises, a process really dies by a signal, a port is really taken,
# a filesystem is really full or read-only, the kernel really OOM-kills inside a memory cgroup. Nothing printed
# here is written by hand. The labels (expected cause and actor) are in the corpus's labels files.
set -u
OUT=${1:?usage: provoke.sh OUTDIR [CASE...]}
shift
mkdir -p "$OUT"
HERE=$(cd "$(dirname "$0")" && pwd)
JOB=$HERE/job.py
PY=$(command -v python3)
TORCHRUN=$(command -v torchrun)
export OMP_NUM_THREADS=1

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# torchrun, two local ranks, the job with CASE set; extra env comes first.
trun() { env "$@" timeout -k 5 120 "$TORCHRUN" --nproc-per-node 2 --master-port "$(free_port)" "$JOB"; }

# Run COMMAND (a bash command line) in a memory cgroup (v1) of LIMIT bytes under this shell's own, named NAME-<pid>,
# and remove the cgroup after. With KERNEL_LINES > 0, the kernel's last lines about OOM kills follow the command's
# output (dmesg), as a node's log bundle has them. Returns the command's status.
in_memory_cgroup() {
  local name=$1 limit=$2 kernel_lines=$3 command=$4 cg rc
  cg=$(awk -F: '$2=="memory"{print $3}' /proc/self/cgroup)
  cg=/sys/fs/cgroup/memory$cg/$name-$$
  mkdir "$cg" && echo "$limit" > "$cg/memory.limit_in_bytes" || return 1
  bash -c "echo \$\$ > $cg/cgroup.procs; $command"
  rc=$?
  sleep 1
  if [ "$kernel_lines" -gt 0 ]; then
    echo "--- dmesg (kernel log of the node, lines since the job started) ---"
    dmesg --time-format iso | tail -400 | grep -iE "oom|killed process|memory cgroup" | tail -"$kernel_lines"
  fi
  rmdir "$cg" 2>/dev/null
  return $rc
}

case_raise()        { trun CASE=raise; }
case_typeerror()    { trun CASE=typeerror; }
case_keyerror()     { trun CASE=keyerror; }
case_recursion()    { trun CASE=recursion; }
case_filenotfound() { trun CASE=filenotfound; }
case_segfault()     { trun CASE=segfault; }
case_segfault_faulthandler() { trun CASE=segfault PYTHONFAULTHANDLER=1; }
case_abort()        { trun CASE=abort; }
case_exit()         { trun CASE=exit; }
case_missing_module() { trun CASE=missing-module; }
case_missing_lib()  { trun CASE=missing-lib; }
case_cuda_on_cpu_build() { trun CASE=cuda-on-cpu-build; }
case_nccl_on_cpu_build() { trun CASE=nccl-on-cpu-build; }
case_collective_timeout() { trun CASE=hang PG_TIMEOUT_S=10; }
case_mismatch()     { trun CASE=mismatch PG_TIMEOUT_S=15; }
case_mismatch_detail() { trun CASE=mismatch PG_TIMEOUT_S=15 TORCH_DISTRIBUTED_DEBUG=DETAIL; }
case_bad_ifname()   { trun CASE=healthy GLOO_SOCKET_IFNAME=ib0; }
case_healthy()      { trun CASE=healthy CKPT=/tmp/corpus-healthy-ckpt.pt; }
case_healthy_detail() { trun CASE=healthy TORCH_DISTRIBUTED_DEBUG=DETAIL TORCH_CPP_LOG_LEVEL=INFO STEPS=4; }
case_healthy_retry() { trun CASE=healthy-retry; }
case_healthy_graph_break() { trun CASE=compile-graph-break TORCH_LOGS=graph_breaks; }
case_healthy_storage() { trun CASE=healthy-storage STEPS=3; }
# Without OMP_NUM_THREADS in the environment torchrun prints its banner (a WARNING) before the ranks start.
case_healthy_omp_banner() { env -u OMP_NUM_THREADS CASE=healthy STEPS=3 timeout -k 5 120 "$TORCHRUN" --nproc-per-node 2 --master-port "$(free_port)" "$JOB"; }
# Four ranks on two cores with debug variables a user left set. On the lab machine every rank trained to the end,
# then one rank aborted at exit ("terminate called without an active exception"): kept as a failure.
case_four_ranks_teardown() { CASE=healthy STEPS=3 NCCL_DEBUG=INFO TORCH_CPP_LOG_LEVEL=INFO timeout -k 5 120 "$TORCHRUN" --nproc-per-node 4 --master-port "$(free_port)" "$JOB"; }
case_healthy_scheduler_warning() { trun CASE=healthy-sched STEPS=3; }
case_healthy_lo()   { trun CASE=healthy GLOO_SOCKET_IFNAME=lo STEPS=3; }
case_healthy_single() {
  CASE=healthy RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$(free_port) \
    timeout -k 5 120 "$PY" "$JOB"
}

# A rank killed from outside (kill -9 while it stalls): nothing in the job says why.
case_sigkill() {
  local pidfile=/tmp/corpus-victim-$$
  rm -f "$pidfile"
  env CASE=hang PG_TIMEOUT_S=60 PIDFILE=$pidfile timeout -k 5 120 "$TORCHRUN" --nproc-per-node 2 \
    --master-port "$(free_port)" "$JOB" &
  local launcher=$!
  for _ in $(seq 60); do [ -s "$pidfile" ] && break; sleep 1; done
  sleep 1
  kill -9 "$(cat "$pidfile")"
  wait "$launcher"
  rm -f "$pidfile"
}

# The master port is already taken by another process.
case_port_in_use() {
  local port; port=$(free_port)
  "$PY" -c "import socket,time; s=socket.socket(); s.bind(('0.0.0.0',$port)); s.listen(); time.sleep(60)" &
  local holder=$!
  sleep 1
  CASE=healthy timeout -k 5 120 "$TORCHRUN" --nproc-per-node 2 --master-port "$port" "$JOB"
  kill "$holder"; wait "$holder" 2>/dev/null
}

# The second node's agent cannot reach the master: nothing listens there.
case_rdzv_unreachable() {
  CASE=healthy timeout -k 5 120 "$TORCHRUN" --nnodes 2 --node-rank 1 --nproc-per-node 1 \
    --master-addr 127.0.0.1 --master-port "$(free_port)" --rdzv-conf timeout=15 "$JOB"
}

# c10d rendezvous waiting for a second node that never comes.
case_rdzv_c10d_timeout() {
  CASE=healthy timeout -k 5 120 "$TORCHRUN" --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d \
    --rdzv-endpoint "127.0.0.1:$(free_port)" --rdzv-id corpus --rdzv-conf join_timeout=15 "$JOB"
}

# init_process_group on rank 0 of 2, rank 1 never starts: the store waits for clients and times out.
case_store_timeout() {
  CASE=healthy RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$(free_port) PG_TIMEOUT_S=10 \
    timeout -k 5 120 "$PY" "$JOB"
}

# Rank 1 of 2 with nobody listening on the master port.
case_store_connect_refused() {
  CASE=healthy RANK=1 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$(free_port) PG_TIMEOUT_S=10 \
    timeout -k 5 120 "$PY" "$JOB"
}

# A MASTER_ADDR that does not resolve.
case_master_addr_unresolvable() {
  CASE=healthy RANK=1 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=trainer-0.cluster.invalid MASTER_PORT=29500 \
    PG_TIMEOUT_S=10 timeout -k 5 120 "$PY" "$JOB"
}

# The checkpoint folder is a 512 KiB tmpfs (in a private mount namespace): the save runs out of space.
case_disk_full() {
  unshare -m --propagation private bash -c "mkdir -p /mnt/corpus-ckpt && mount -t tmpfs -o size=512k tmpfs /mnt/corpus-ckpt && \
    CASE=save-full CKPT=/mnt/corpus-ckpt/step-6.pt OMP_NUM_THREADS=1 timeout -k 5 120 $TORCHRUN --nproc-per-node 2 --master-port $(free_port) $JOB"
}

# The checkpoint folder is mounted read-only.
case_read_only() {
  unshare -m --propagation private bash -c "mkdir -p /mnt/corpus-ckpt && mount -t tmpfs -o ro,size=1m tmpfs /mnt/corpus-ckpt && \
    CASE=save-ro CKPT=/mnt/corpus-ckpt/step-6.pt OMP_NUM_THREADS=1 timeout -k 5 120 $TORCHRUN --nproc-per-node 2 --master-port $(free_port) $JOB"
}

# The checkpoint folder belongs to another user and the job may not write there (root without DAC override).
case_permission_denied() {
  local dir=/tmp/corpus-shared-ckpt
  mkdir -p "$dir" && chown 65534:65534 "$dir" && chmod 755 "$dir"
  CASE=save-denied CKPT=$dir/step-6.pt capsh --drop=cap_dac_override,cap_dac_read_search,cap_fowner -- -c \
    "OMP_NUM_THREADS=1 timeout -k 5 120 $TORCHRUN --nproc-per-node 2 --master-port $(free_port) $JOB"
  rmdir "$dir" 2>/dev/null
}

# Address space capped with ulimit -v: the allocation fails inside torch.
case_oom_ulimit() {
  bash -c "ulimit -v 3000000; CASE=oom-host OMP_NUM_THREADS=1 timeout -k 5 120 $TORCHRUN --nproc-per-node 2 --master-port $(free_port) $JOB"
}

# The job runs in a 1.5 GiB memory cgroup: the kernel's OOM killer kills a rank. The kernel's lines about it
# (dmesg) are appended after the job's output, as a node's log bundle has them.
case_oom_cgroup() {
  in_memory_cgroup corpus-oom $((1536 * 1024 * 1024)) 20 \
    "CASE=oom-host OMP_NUM_THREADS=1 exec timeout -k 5 120 $TORCHRUN --nproc-per-node 2 --master-port $(free_port) $JOB"
}

# A DataLoader with workers on a container-sized /dev/shm (1 MiB here): a worker dies of SIGBUS.
case_shm_small() {
  unshare -m --propagation private bash -c "mount -t tmpfs -o size=1m tmpfs /dev/shm && OMP_NUM_THREADS=1 timeout -k 5 120 $PY $HERE/loader.py"
}

# Rank 1 starts 10 s before rank 0 with an 8 s timeout: its store client times out once, retries, and the job
# then trains to the end.
case_late_master_retry() {
  local port; port=$(free_port)
  CASE=healthy RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port PG_TIMEOUT_S=8 \
    timeout -k 5 120 "$PY" "$JOB" &
  local r1=$!
  sleep 10
  CASE=healthy RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port PG_TIMEOUT_S=60 \
    CKPT=/tmp/corpus-late-ckpt.pt timeout -k 5 120 "$PY" "$JOB"
  wait "$r1"
}

# torch.compile(fullgraph=True) over a data-dependent branch.
case_compile_fullgraph() { trun CASE=compile-fullgraph; }

# torch.compile where the C++ compiler inductor needs is not there (CXX names a missing one).
case_compile_no_compiler() { trun CASE=compile-no-compiler CXX=/usr/bin/g++-14 TORCHINDUCTOR_CACHE_DIR=/tmp/corpus-inductor-$$; }

# One process (no launcher) in a 1 GiB memory cgroup, started from bash: the shell reports "Killed". The
# kernel's lines about it are appended, as above.
case_oom_cgroup_single() {
  in_memory_cgroup corpus-oom1 $((1024 * 1024 * 1024)) 6 \
    "$PY -c 'import torch; print(\"building the embedding table\", flush=True); t=[torch.ones(256,1024,1024) for _ in range(8)]'"
}

# A DataLoader asking for more workers than the machine has cores: torch warns, the epoch completes.
case_loader_workers_warning() {
  bash -c "ulimit -n 64; OMP_NUM_THREADS=1 LOADER_WORKERS=4 timeout -k 5 120 $PY $HERE/loader.py"
}

# Resuming from a checkpoint that an earlier run left cut short (the node rebooted while it was being written).
case_corrupt_checkpoint() {
  local ckpt=/tmp/corpus-resume-$$.pt
  "$PY" -c "import torch; torch.save(torch.nn.Linear(64, 8).state_dict(), '$ckpt')"
  truncate -s 1000 "$ckpt"
  trun CASE=corrupt-checkpoint RESUME=$ckpt
  rm -f "$ckpt"
}

# Resuming from a checkpoint of another model shape (the job's config changed the width).
case_state_dict_mismatch() {
  local ckpt=/tmp/corpus-resume-$$.pt
  "$PY" -c "import torch; torch.save(torch.nn.Linear(64, 16).state_dict(), '$ckpt')"
  trun CASE=state-dict-mismatch RESUME=$ckpt
  rm -f "$ckpt"
}

# torch.load's weights_only default refuses the job's own class in its checkpoint.
case_weights_only() { trun CASE=weights-only; }

# Anomaly detection names the backward function that made a NaN.
case_nan_anomaly() { trun CASE=nan-anomaly; }

# The job passes world_size=4 to init_process_group; torchrun started 2.
case_world_size_mismatch() { trun CASE=world-size-mismatch PG_TIMEOUT_S=15; }

# Rank 0's metrics port is taken by an exporter already running on the node.
case_metrics_port() {
  local port; port=$(free_port)
  "$PY" -c "import socket,time; s=socket.socket(); s.bind(('0.0.0.0',$port)); s.listen(); time.sleep(60)" &
  local holder=$!
  sleep 1
  trun CASE=metrics-port METRICS_PORT=$port
  kill "$holder"; wait "$holder" 2>/dev/null
}

# The node has no route out (a network namespace with only loopback): the tokenizer download fails.
case_hub_offline() { unshare -n bash -c "ip link set lo up; CASE=hub-offline OMP_NUM_THREADS=1 timeout -k 5 120 $TORCHRUN --nproc-per-node 2 --master-port $(free_port) $JOB"; }

# inductor's cache folder is a 256 KiB tmpfs: writing the compiled graph to its cache runs out of space; torch
# warns with the traceback, compiles in memory and the run trains to the end.
case_healthy_inductor_cache_full() {
  unshare -m --propagation private bash -c "mkdir -p /mnt/corpus-inductor && mount -t tmpfs -o size=256k tmpfs /mnt/corpus-inductor && \
    CASE=healthy-inductor-cache TORCHINDUCTOR_CACHE_DIR=/mnt/corpus-inductor OMP_NUM_THREADS=1 timeout -k 5 180 $TORCHRUN --nproc-per-node 2 --master-port $(free_port) $JOB"
}

# A per-process CPU-time limit (ulimit -S -t, as some login nodes and batch queues set): the busy rank gets SIGXCPU.
case_cpu_time_limit() { bash -c "ulimit -S -t 10; CASE=cpu-burn OMP_NUM_THREADS=1 timeout -k 5 120 $TORCHRUN --nproc-per-node 2 --master-port $(free_port) $JOB"; }

# A per-process file-size limit (ulimit -f 1024, 1 MiB): saving a 4 MiB shard fails (Python ignores SIGXFSZ, so
# the write gets EFBIG and torch's writer reports what it saw).
case_file_size_limit() { bash -c "ulimit -f 1024; CASE=save-big CKPT=/tmp/corpus-big-$$.pt OMP_NUM_THREADS=1 timeout -k 5 120 $TORCHRUN --nproc-per-node 2 --master-port $(free_port) $JOB"; rm -f /tmp/corpus-big-$$.pt.rank*; }

# torchrun stopped from outside with SIGTERM (what a scheduler's preemption or an operator's kill sends).
case_sigterm() {
  env CASE=hang PG_TIMEOUT_S=120 timeout -k 5 120 "$TORCHRUN" --nproc-per-node 2 --master-port "$(free_port)" "$JOB" &
  local launcher=$!
  sleep 12
  pkill -TERM -f "torchrun --nproc-per-node 2 --master-port" || kill -TERM "$launcher"
  wait "$launcher"
}

# DataLoader workers passing tensors as file descriptors under ulimit -n 128.
case_loader_fd_limit() { bash -c "ulimit -n 128; LOADER_MODE=fields LOADER_WORKERS=4 OMP_NUM_THREADS=1 timeout -k 5 120 $PY $HERE/loader.py"; }

# DataLoader workers decoding large clips in a 1 GiB memory cgroup: the kernel kills a worker. Only the
# console is kept (no kernel log), as a user pastes it.
case_loader_worker_oom() {
  in_memory_cgroup corpus-oomw $((1024 * 1024 * 1024)) 0 \
    "LOADER_MODE=decode LOADER_WORKERS=2 OMP_NUM_THREADS=1 exec timeout -k 5 120 $PY $HERE/loader.py"
}

# torch.multiprocessing.spawn with a closure as the entry point.
case_spawn_closure() { OMP_NUM_THREADS=1 timeout -k 5 120 "$PY" "$HERE/spawn.py"; }

# A run whose metrics push fails every step (the tracking server is down): logged with a traceback, training goes on.
case_healthy_upload() { trun CASE=healthy-upload STEPS=4; }

# A compiled model over growing batch shapes: dynamo recompiles (and says so), the run ends well.
case_healthy_compile() { trun CASE=healthy-compile STEPS=5 TORCH_LOGS=recompiles; }

# torch's trainer calls init_process_group a second time.
case_init_twice() { trun CASE=init-twice; }

# DistributedDataParallel with a parameter the loss never uses (find_unused_parameters left off).
case_ddp_unused() { trun CASE=ddp-unused; }

# DistributedDataParallel over ranks whose models differ in shape (each rank read its own config copy).
case_ddp_shape_mismatch() { trun CASE=ddp-shape-mismatch; }

# The job started with plain python instead of torchrun: no RANK/WORLD_SIZE/MASTER_ADDR in its environment.
case_no_launcher() { env -u RANK -u WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT CASE=healthy timeout -k 5 120 "$PY" "$JOB"; }

# Rank 0 writes a large fsynced checkpoint at step 2 under a 3 s process-group timeout: the other rank's next
# all-reduce times out while it saves.
case_slow_save() { trun CASE=slow-save PG_TIMEOUT_S=3 CKPT_DIR=/var/tmp SHARDS=12; }

# The checkpoint folder has room but few inodes (a tmpfs with nr_inodes=12): a save per step runs out of inodes.
case_inodes_full() {
  unshare -m --propagation private bash -c "mkdir -p /mnt/corpus-ckpt && mount -t tmpfs -o size=64m,nr_inodes=12 tmpfs /mnt/corpus-ckpt && \
    CASE=save-shards CKPT_DIR=/mnt/corpus-ckpt STEPS=20 OMP_NUM_THREADS=1 timeout -k 5 120 $TORCHRUN --nproc-per-node 2 --master-port $(free_port) $JOB"
}

# An operator presses Ctrl-C in the terminal that runs torchrun (SIGINT to its process group) mid-training.
case_sigint() {
  CASE=healthy STEPS=200 STEP_S=0.5 setsid bash -c "timeout -k 5 120 $TORCHRUN --nproc-per-node 2 --master-port $(free_port) $JOB" &
  local leader=$!
  sleep 12
  kill -INT -- -"$leader"
  wait "$leader"
}

cases=("$@")
if [ ${#cases[@]} -eq 0 ]; then
  mapfile -t cases < <(declare -F | awk '{print $3}' | sed -n 's/^case_//p')
fi
for c in "${cases[@]}"; do
  name=${c//_/-}
  echo "== $name"
  "case_${c//-/_}" > "$OUT/$name.log" 2>&1
  echo "exit $? -> $OUT/$name.log"
done
