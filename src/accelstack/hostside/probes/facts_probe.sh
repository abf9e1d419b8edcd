# accelstack facts probe: POSIX sh, run on the managed host as
#   sh -c "$(cat facts_probe.sh)" accelstack-probe TIMEOUT STACK_TIMEOUT ASCEND_ROOT PYTHON STACK_SNIPPET NET_SNIPPET \
#       SCOPE DISK_PATH...
# and printing framed raw text that accelstack.facts.assemble.probe_document reads back into the probe document.
# SCOPE "host" reads everything; "components" reads only what the installed versions are read from (the versions
# check, every few minutes in a health check): no network, free space, PCI or memory reads, no npu-smi, and
# nvidia-smi only where the loaded driver's /proc/driver/nvidia/version does not give its version.
#
# Why sh and not python: a host pays for this probe on every facts, provision and bundle run, and a python3
# start with the imports a tool runner needs (subprocess, json, glob) cost 45 ms of CPU per host, two thirds of
# what a host spends answering `inv facts` (sshd's own share is about 27 ms); this script costs about 5 ms, and
# it still answers on a host without python3. Python runs only where only Python can look: the stack's python
# (stack_snippet.py, for torch and its NCCL) and, on a host without iproute2, the ioctls for IPv4 addresses
# (net_snippet.py).
#
# Rules this file keeps:
# - raw text only: vendor output is interpreted on the control side, where parsers are tested on captures.
# - a missing tool is data, a hung tool is data (npu-smi can hang on a wedged device): every tool runs under
#   coreutils' `timeout`, which signals the tool's whole process group, and nothing here may stop the script.
# - every value from the control side arrives as a positional parameter and is only ever expanded in double
#   quotes: no option value is ever shell code. Globbing is off except where a pattern is meant.
#
# Framing (one marker line per event; the text after a marker line runs up to the newline before the next one):
#   M begin 2
#   M run NAME CMD        the tool's stderr follows
#   M out NAME RC         its stdout follows; RC is its exit status, or "timeout"
#   M missing NAME CMD     the tool that is not there follows
#   M native NAME CMD     a value this script read itself follows
#   M file PATH           the file's content follows
#   M nofile PATH
#   M note TEXT
#   M end
set -f
M=@@accelstack-probe@@
ON_PATH=
TO=$1 STACK_TO=$2 ROOT=$3 PY=$4 STACK_SNIPPET=$5 NET_SNIPPET=$6 SCOPE=$7
shift 7
LC_ALL=C LANG=C
export LC_ALL LANG
EXTRA_DIRS=/usr/local/bin:/usr/local/sbin:/usr/sbin:/sbin:/usr/bin:/bin:/usr/local/cuda/bin:/usr/local/nvidia/bin
NL='
'

# find_tool NAME [path]: T is the first executable NAME on PATH, then in EXTRA_DIRS unless "path" is given
# (NAME itself when it holds a slash).
find_tool() {
    T=
    case $1 in
    */*) if [ -f "$1" ] && [ -x "$1" ]; then T=$1; fi; return ;;
    esac
    dirs=$PATH  # one expansion: only what an expansion yields is split at IFS
    [ -n "$2" ] || dirs=$PATH:$EXTRA_DIRS
    save_ifs=$IFS
    IFS=:
    for d in $dirs; do
        if [ -n "$d" ] && [ -f "$d/$1" ] && [ -x "$d/$1" ]; then T=$d/$1; break; fi
    done
    IFS=$save_ifs
}

# run NAME CMD LIMIT TOOL ARGS...: stderr streams out framed, stdout is kept in $out (the caller may look at it)
# and then printed, $rc is the exit status. `timeout` (coreutils) kills the tool's whole group at LIMIT; an
# empty LIMIT is a tool that cannot hang (it reads the kernel, not a device or a file system), run bare.
run() {
    name=$1 shown=$2 limit=$3
    shift 3
    printf '%s run %s %s\n' "$M" "$name" "$shown"
    if [ -n "$TIMEOUT" ] && [ -n "$limit" ]; then
        out=$("$TIMEOUT" -k 2 "$limit" "$@" 2>&3 </dev/null; printf '\n%s' "$?")
    else
        out=$("$@" 2>&3 </dev/null; printf '\n%s' "$?")
    fi
    rc=${out##*$NL}
    out=${out%$NL*}
    if [ -n "$TIMEOUT" ] && [ -n "$limit" ] && { [ "$rc" = 124 ] || [ "$rc" = 137 ]; }; then rc=timeout; fi
    printf '\n%s out %s %s\n%s\n' "$M" "$name" "$rc" "$out"
}

# tool NAME LIMIT TOOL ARGS...: run TOOL (found on PATH or in EXTRA_DIRS) as section NAME, or say it is missing.
tool() {
    name=$1 limit=$2 wanted=$3
    shift 3
    find_tool "$wanted" "$ON_PATH"
    if [ -z "$T" ]; then
        rc=missing out=
        printf '%s missing %s %s\n%s\n' "$M" "$name" "$wanted $*" "$wanted"
        return
    fi
    run "$name" "$T $*" "$limit" "$T" "$@"
}

native() {
    printf '%s native %s %s\n%s\n' "$M" "$1" "$2" "$3"
}

# put_file PATH [small]: the file's content, once per path (the patterns below also match some fixed paths).
# A small file (a few KiB at most) is read by the shell itself, line by line: no child process.
SEEN=$NL
put_file() {
    case $SEEN in *"$NL$1$NL"*) return ;; esac
    SEEN="$SEEN$1$NL"
    if [ -f "$1" ] && [ -r "$1" ]; then
        printf '%s file %s\n' "$M" "$1"
        if [ -n "$2" ]; then
            while IFS= read -r line || [ -n "$line" ]; do printf '%s\n' "$line"; done <"$1"
        else
            cat -- "$1" 2>/dev/null
        fi
        printf '\n'
    else
        printf '%s nofile %s\n' "$M" "$1"
    fi
}

# probe DISK_PATH...
probe() {
    printf '%s begin 2\n' "$M"
    find_tool timeout
    TIMEOUT=$T
    [ -n "$TIMEOUT" ] || printf '%s note %s\n' "$M" "timeout (coreutils) not found: a hung tool holds the probe until the command's own limit"

    MACHINE=  # uname -m, for the Ascend folders below too
    [ -r /proc/sys/kernel/arch ] && read -r MACHINE </proc/sys/kernel/arch  # Linux 6.1 and newer
    [ -n "$MACHINE" ] || MACHINE=$(uname -m)
    if [ "$SCOPE" != components ]; then
        # The host: read from /proc and /sys, no child process.
        value=
        read -r value </proc/sys/kernel/hostname
        native hostname "read /proc/sys/kernel/hostname" "$value"
        uname_text=
        for key in ostype osrelease version; do
            value=
            read -r value <"/proc/sys/kernel/$key"
            uname_text="$uname_text$value$NL"
        done
        native uname "read /proc/sys/kernel/{ostype,osrelease,version,arch}" "$uname_text$MACHINE"
        value=
        read -r value </sys/devices/system/cpu/online
        native cpu_count "read /sys/devices/system/cpu/online" "$value"
        set +f
        list=
        for node in /sys/devices/system/node/node[0-9]*; do
            if [ -d "$node" ]; then list="$list${node##*/}$NL"; fi
        done
        native numa_nodes "ls /sys/devices/system/node" "$list"
        list=
        for dev in /sys/bus/pci/devices/*; do
            [ -r "$dev/vendor" ] || continue
            read -r vendor <"$dev/vendor"
            case $vendor in
            0x10de | 0x10DE | 0x19e5 | 0x19E5) ;;
            *) continue ;;
            esac
            device= class= numa=
            [ -r "$dev/device" ] && read -r device <"$dev/device"
            [ -r "$dev/class" ] && read -r class <"$dev/class"
            [ -r "$dev/numa_node" ] && read -r numa <"$dev/numa_node"
            list="$list${dev##*/} $vendor ${device:--} ${class:--} ${numa:--}$NL"
        done
        set -f
        native pci "read /sys/bus/pci/devices/*/{vendor,device,class,numa_node}" "$list"
        # The shell's own limits are its children's: read them, no subshell for `ulimit`.
        list=
        while read -r w1 w2 w3 soft hard unit; do
            if [ "$w1 $w2 $w3" = "Max locked memory" ]; then list="$soft$NL$hard"; break; fi
        done </proc/self/limits
        native memlock "read Max locked memory from /proc/self/limits" "$list"
        for path in /etc/os-release /proc/meminfo; do put_file "$path" small; done
        # Free space of /dev/shm and of every disk path, one statvfs each: block size, blocks, available, name.
        list=
        for path in "$@"; do list="$list$path$NL"; done
        native disk_paths "the disk paths asked for" "$list"
        tool statvfs "$TO" stat -f -c '%S %b %a %n' -- /dev/shm "$@"  # after --, a path that begins with - is a path

        # Network: iproute2's JSON; its one-line text where -j is unknown (iproute2 < 4.13); else /sys/class/net.
        tool ip_addr "" ip -j addr
        case $rc:$out in
        missing:*) ;;
        0:\[*) ;;
        *)
            json_rc=$rc
            tool ip_addr_text "" ip -o addr
            text_rc=$rc
            tool ip_link_text "" ip -o link
            # /sys/class/net when ip -j failed and ip -o addr gave no addresses, whatever ip -o link did
            rc=$text_rc
            [ "$json_rc" = 0 ] && rc=0
            ;;
        esac
        if [ "$rc" != 0 ]; then
            find_tool python3 path
            if [ -n "$T" ]; then
                run net_sys "python3 <net snippet>" "$TO" "$T" -E -S -c "$NET_SNIPPET"
            else
                printf '%s missing %s %s\n%s\n' "$M" net_sys "python3 <net snippet>" python3
            fi
            put_file /proc/net/if_inet6 small
        fi
    fi

    # NVIDIA
    put_file /proc/driver/nvidia/version
    # The driver's version comes from the loaded module's file first (facts/assemble.py): with "components" and a
    # module line that carries a version there, nvidia-smi (a real cost on a GPU node) has nothing to add.
    smi=yes
    if [ "$SCOPE" = components ] && [ -r /proc/driver/nvidia/version ]; then
        while IFS= read -r line || [ -n "$line" ]; do
            case $line in *"Kernel Module"*[0-9].[0-9]*) smi= ;; esac
        done </proc/driver/nvidia/version
    fi
    if [ -n "$smi" ]; then
        tool nvidia_smi "$TO" nvidia-smi \
            --query-gpu=index,name,uuid,pci.bus_id,driver_version,memory.total,memory.used,temperature.gpu,utilization.gpu \
            --format=csv,noheader,nounits
    fi
    for path in /usr/local/cuda/version.json /usr/local/cuda/version.txt; do put_file "$path"; done
    tool nvcc "$TO" nvcc --version
    set +f
    list=
    for dir in /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib64 /usr/lib /usr/local/lib \
        /usr/local/cuda/lib64 /usr/local/nccl/lib /opt/nccl/lib; do
        for lib in "$dir"/libnccl.so*; do
            if [ -e "$lib" ]; then list="$list$lib$NL"; fi
        done
    done
    set -f
    native nccl_libs "ls libnccl.so* in the library folders" "$list"
    # Which of them a program linking -lnccl gets: the first libnccl.so.2 in the loader's cache (ld.so.conf's
    # folder order). Only its lines travel, and only where a system libnccl exists.
    if [ -n "$list" ]; then
        find_tool ldconfig
        if [ -n "$T" ]; then
            cache=$("$T" -p 2>/dev/null </dev/null)
            found=
            while IFS= read -r line; do
                case $line in *libnccl.so.2\ *) found="$found$line$NL" ;; esac
            done <<CACHE
$cache
CACHE
            native nccl_loader "ldconfig -p: libnccl.so.2" "$found"
            # ... and the file that name leads to (libnccl.so.2 -> libnccl.so.2.28.9): its name is the version.
            first=${found%%"$NL"*}
            if [ -n "$first" ] && find_tool readlink && [ -n "$T" ]; then
                native nccl_loader_file "readlink -f" "$("$T" -f -- "${first##*=> }" 2>/dev/null)"
            fi
        fi
    fi
    for path in /usr/include/nccl.h /usr/local/cuda/include/nccl.h /usr/local/include/nccl.h \
        /usr/local/nccl/include/nccl.h; do
        if [ -f "$path" ]; then put_file "$path"; fi
    done

    # Ascend: the version files of both the CANN <= 8.3 (ascend-toolkit) and the 8.5+ (cann) layouts; the patterns
    # catch an arch folder that differs from uname (containers) and versioned nnal folders.
    for path in /etc/ascend_install.info "$ROOT/driver/version.info" "$ROOT/firmware/version.info" \
        "$ROOT/ascend-toolkit/latest/version.cfg" \
        "$ROOT/ascend-toolkit/latest/$MACHINE-linux/ascend_toolkit_install.info" \
        "$ROOT/ascend-toolkit/latest/runtime/version.info" "$ROOT/ascend-toolkit/latest/opp_kernel/version.info" \
        "$ROOT/cann/version.cfg" "$ROOT/cann/$MACHINE-linux/ascend_toolkit_install.info" \
        "$ROOT/cann/$MACHINE-linux/ascend_ops_install.info" "$ROOT/nnal/atb/latest/version.info"; do
        put_file "$path"
    done
    set +f
    for path in "$ROOT"/ascend-toolkit/latest/*-linux/ascend_*_install.info "$ROOT"/cann/*-linux/ascend_*_install.info \
        "$ROOT"/nnal/atb/*/version.info; do
        if [ -f "$path" ]; then put_file "$path"; fi
    done
    set -f
    [ "$SCOPE" = components ] || tool npu_smi "$TO" npu-smi info

    # The python3 on PATH, which the validators run on, without starting an interpreter; then the stack's python.
    ON_PATH=path
    tool probe_python "" python3 -V
    ON_PATH=
    [ "$rc" = missing ] && printf '%s note %s\n' "$M" "python3 not found on PATH: the validators need it"
    find_tool "$PY"
    if [ -n "$T" ]; then
        run stack_python "$PY -c <stack snippet>" "$STACK_TO" "$T" -c "$STACK_SNIPPET"
    else
        printf '%s missing %s %s\n%s\n' "$M" stack_python "$PY -c <stack snippet>" "$PY"
    fi
    printf '%s end\n' "$M"
}

# The whole output leaves in one write: every write would be an SSH packet of its own, and the control side
# pays for each packet it reads (decrypt, parse, wake the reader): 40 a host, where one or two will do.
all=$(
    exec 3>&1
    probe "$@"
)
printf '%s\n' "$all"
