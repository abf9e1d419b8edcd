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
# it still answers on a host without python3. The stack's python is read from its files (stack_files below: a
# python start in a venv of 200 packages costs 0.46 CPU-s, what a health check every few minutes cannot pay); it
# runs its snippet (stack_snippet.py) only where its files cannot answer. Python also runs, on a host without
# iproute2, for the ioctls for IPv4 addresses (net_snippet.py).
#
# Rules this file keeps:
# - raw text only: vendor output is interpreted on the control side, where parsers are tested on captures.
# - a missing tool is data, a hung tool is data (npu-smi can hang on a wedged device): every tool runs under
#   coreutils' `timeout`, which signals the tool's whole process group, and nothing here may stop the script.
#   (The stack python's `-V` runs bare: it prints before reading a file, and the files beside it are read by this
#   shell itself, as every file here is.)
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
# @vendor-tool-dirs@ (accelstack.facts.probe: the folders each vendor's tools live in, after the system's, and
# SEEN_<vendor>= for each vendor)
EXTRA_DIRS=/usr/local/bin:/usr/local/sbin:/usr/sbin:/sbin:/usr/bin:/bin
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

# ----- the stack's python, from its files --------------------------------------------------------------------------
# stack_files PYTHON prints what the interpreter's snippet (stack_snippet.py) would print, read from files: its
# version (`-V`, which prints before any path or site work: 1 ms), torch and torch_npu (the first folder on sys.path
# holding NAME/__init__.py; the version in the first NAME-*.dist-info/METADATA or egg-info/PKG-INFO there), torch's
# version.py, the libnccl files torch loads and the nvidia-nccl wheels' versions. sys.path is rebuilt as site.py
# builds it (https://docs.python.org/3/library/site.html): PYTHONPATH; the venv's site-packages (pyvenv.cfg beside
# or above the interpreter), or the prefix's (found from the interpreter's real path, Debian's dist-packages where
# the prefix has them); the user site where site.py enables it; the folders each .pth line names. It returns 1,
# having printed nothing, wherever the files may not say what the interpreter would (PYTHONHOME, a layout it does
# not know, a torch it does not find or finds twice, a torch or NCCL wheel in the working folder, a libnccl whose
# version only the library itself carries): the snippet runs then, as it always did.
# sf_norm PATH: SF_NORM is PATH made absolute (os.path.abspath: ".", ".." and repeated "/" resolved by name).
sf_norm() {
    case $1 in
    /*) sf_p=$1 ;;
    *)
        [ -n "$SF_CWD" ] || SF_CWD=$(pwd -P)
        sf_p=$SF_CWD/$1
        ;;
    esac
    sf_out=
    sf_nifs=$IFS
    IFS=/
    for sf_seg in $sf_p; do
        case $sf_seg in
        '' | .) ;;
        ..) sf_out=${sf_out%/*} ;;
        *) sf_out=$sf_out/$sf_seg ;;
        esac
    done
    IFS=$sf_nifs
    SF_NORM=${sf_out:-/}
}

# sf_site DIR: a site folder as site.addsitedir adds it: the folder, then what its .pth files name, in name order
# (their `import` lines run code: nothing a file can tell).
sf_site() {
    [ -d "$1" ] || return 0
    SF_ROOTS=$SF_ROOTS$1$NL
    sf_pths=
    set +f
    for sf_pth in "$1"/*.pth; do
        if [ -f "$sf_pth" ] && [ -r "$sf_pth" ]; then sf_pths=$sf_pths$sf_pth$NL; fi
    done
    set -f
    sf_sifs=$IFS
    IFS=$NL
    for sf_pth in $sf_pths; do
        IFS=$sf_sifs
        while IFS= read -r sf_line || [ -n "$sf_line" ]; do
            case $sf_line in '#'* | 'import '* | 'import	'*) continue ;; esac
            sf_line=${sf_line%"${sf_line##*[![:space:]]}"}
            case $sf_line in *[![:space:]]*) ;; *) continue ;; esac
            case $sf_line in /*) sf_norm "$sf_line" ;; *) sf_norm "$1/$sf_line" ;; esac
            if [ -e "$SF_NORM" ]; then SF_ROOTS=$SF_ROOTS$SF_NORM$NL; fi
        done <"$sf_pth"
    done
    IFS=$sf_sifs
}

# sf_prefix_sites PREFIX VENV: the site folders site.getsitepackages gives for PREFIX (VENV: inside a venv).
sf_prefix_sites() {
    if [ -n "$SF_DEBIAN" ]; then
        [ -z "$2" ] || sf_site "$1/lib/python$SF_XY/site-packages"
        sf_site "$1/local/lib/python$SF_XY/dist-packages"
        sf_site "$1/lib/python3/dist-packages"
        sf_site "$1/$SF_PLAT/python$SF_XY/dist-packages"
        [ "$SF_PLAT" = lib ] || sf_site "$1/lib/python$SF_XY/dist-packages"
    else
        sf_site "$1/$SF_PLAT/python$SF_XY/site-packages"
        [ "$SF_PLAT" = lib ] || sf_site "$1/lib/python$SF_XY/site-packages"
    fi
}

# sf_metadata FILE: SF_VER is the Version header of a METADATA or PKG-INFO file (read up to it, at most its headers).
sf_metadata() {
    SF_VER=
    [ -f "$1" ] && [ -r "$1" ] || return 1
    while IFS= read -r sf_line; do
        case $sf_line in
        [Vv][Ee][Rr][Ss][Ii][Oo][Nn]:*)
            SF_VER=${sf_line#*:}
            SF_VER=${SF_VER#"${SF_VER%%[![:space:]]*}"}
            SF_VER=${SF_VER%"${SF_VER##*[![:space:]]}"}
            break
            ;;
        *[![:space:]]*) ;;
        *) break ;;  # the empty line that ends the headers
        esac
    done <"$1"
    [ -n "$SF_VER" ]
}

# sf_dist ROOT NAME: 0 with SF_VER where ROOT holds one NAME-*.dist-info or egg-info with a version, 1 where it
# holds none, 2 where it holds several (which one the interpreter takes is the folder's listing order) or one
# without a version.
sf_dist() {
    sf_hits=
    set +f
    for sf_d in "$1/$2"-*.dist-info "$1/$2".dist-info "$1/$2"-*.egg-info "$1/$2".egg-info; do
        if [ -e "$sf_d" ]; then sf_hits=$sf_hits$sf_d$NL; fi
    done
    set -f
    [ -n "$sf_hits" ] || return 1
    sf_d=${sf_hits%$NL}
    case $sf_d in *$NL*) return 2 ;; esac
    if [ -d "$sf_d" ]; then
        sf_metadata "$sf_d/METADATA" || sf_metadata "$sf_d/PKG-INFO" || return 2
    else
        sf_metadata "$sf_d" || return 2
    fi
}

# sf_shadowed ROOT NAME: ROOT holds NAME as something other than a package with an __init__.py (a namespace
# folder, a module file): the interpreter's import system decides what that means.
sf_shadowed() {
    [ -e "$1/$2" ] && return 0
    set +f
    for sf_d in "$1/$2".py "$1/$2".pyc "$1/$2".so "$1/$2".*.so; do
        if [ -e "$sf_d" ]; then
            set -f
            return 0
        fi
    done
    set -f
    return 1
}

# sf_package NAME: SF_LINES gets "package NAME DIR" (the first root with NAME/__init__.py) and "dist NAME VERSION
# ROOT" (the first root with its metadata); 1 where the files cannot tell.
sf_package() {
    sf_pdir= sf_droot=
    # sys.path[0] of `python -c` is the working folder.
    if sf_shadowed . "$1"; then return 1; fi
    sf_dist . "$1"
    [ $? = 1 ] || return 1
    sf_ifs=$IFS
    IFS=$NL
    for sf_r in $SF_ROOTS; do
        if [ -z "$sf_pdir" ]; then
            if [ -f "${sf_r%/}/$1/__init__.py" ]; then
                sf_pdir=${sf_r%/}/$1
            elif sf_shadowed "${sf_r%/}" "$1"; then
                IFS=$sf_ifs
                return 1
            fi
        fi
        if [ -z "$sf_droot" ]; then
            sf_dist "${sf_r%/}" "$1"
            case $? in
            0) sf_droot=$sf_r SF_LINES="${SF_LINES}dist $1 $SF_VER $sf_r$NL" ;;
            2) IFS=$sf_ifs; return 1 ;;
            esac
        fi
    done
    IFS=$sf_ifs
    # Metadata without the package: an editable install, found by a finder that only the interpreter runs.
    if [ -n "$sf_droot" ] && [ -z "$sf_pdir" ]; then return 1; fi
    if [ -n "$sf_pdir" ]; then
        SF_LINES="${SF_LINES}package $1 $sf_pdir$NL"
        SF_FILES=$SF_FILES$sf_pdir/version.py$NL
    fi
    return 0
}

# sf_nccl TORCH_DIR: the libnccl files torch would load, in the order it looks (its own site-packages' nvidia
# wheels, then sys.path's, then torch/lib), and the nvidia-nccl wheels installed; 1 where only the library can tell
# its version (libraries but no wheel).
sf_nccl() {
    sf_libs=$NL sf_wheels=
    sf_ifs=$IFS
    IFS=$NL
    for sf_r in ${1%/*} $SF_ROOTS; do
        set +f
        for sf_lib in "${sf_r%/}"/nvidia/nccl/lib/libnccl.so* "${sf_r%/}"/nvidia/cu*/lib/libnccl.so*; do
            [ -e "$sf_lib" ] || [ -L "$sf_lib" ] || continue
            case $sf_libs in *"$NL$sf_lib$NL"*) continue ;; esac
            sf_libs=$sf_libs$sf_lib$NL
            SF_LINES="${SF_LINES}library $sf_lib$NL"
        done
        set -f
    done
    set +f
    for sf_lib in "$1"/lib/libnccl.so*; do
        if [ -e "$sf_lib" ] || [ -L "$sf_lib" ]; then
            sf_libs=$sf_libs$sf_lib$NL
            SF_LINES="${SF_LINES}library $sf_lib$NL"
        fi
    done
    set -f
    for sf_w in nvidia-nccl-cu13 nvidia-nccl-cu12 nvidia-nccl-cu11 nvidia-nccl; do
        sf_file=$sf_w  # its dist-info's name: nvidia_nccl_cu13-2.28.9.dist-info
        while :; do
            case $sf_file in
            *-*) sf_file=${sf_file%%-*}_${sf_file#*-} ;;
            *) break ;;
            esac
        done
        sf_dist . "$sf_file"
        [ $? = 1 ] || { IFS=$sf_ifs; return 1; }
        for sf_r in $SF_ROOTS; do
            sf_dist "${sf_r%/}" "$sf_file"
            case $? in
            0)
                sf_wheels=yes
                SF_LINES="${SF_LINES}wheel $sf_w $SF_VER$NL"
                break
                ;;
            2) IFS=$sf_ifs; return 1 ;;
            esac
        done
    done
    IFS=$sf_ifs
    [ "$sf_libs" = "$NL" ] || [ -n "$sf_wheels" ]
}

# stack_files PYTHON (see above): 0 when the files answered, and printed; 1, having printed nothing, otherwise.
stack_files() {
    sf_exe=$1 SF_ROOTS= SF_LINES= SF_FILES= SF_CWD=
    # sys.executable is the path the interpreter was started by, normalised by python >= 3.11 only: a plain absolute
    # path reads the same under every version.
    case $sf_exe in /*) ;; *) return 1 ;; esac
    case $sf_exe/ in *//* | */./* | */../*) return 1 ;; esac
    [ -z "${PYTHONHOME-}" ] && [ -z "${PYTHONPLATLIBDIR-}" ] || return 1
    # Bare, not under `timeout`: a folder that hangs would hang the reads below as well, in this shell.
    sf_v=$("$sf_exe" -V 2>/dev/null </dev/null) || return 1
    case $sf_v in "Python 3."[0-9]*) ;; *) return 1 ;; esac
    sf_xy=${sf_v#Python 3.}
    SF_XY=3.${sf_xy%%[!0-9]*}
    # A venv: pyvenv.cfg beside the interpreter or above it (site.venv); sys.prefix is the folder above its bin.
    sf_bin=${sf_exe%/*}
    sf_venv= sf_system=true sf_home=
    for sf_cfg in "$sf_bin/pyvenv.cfg" "${sf_bin%/*}/pyvenv.cfg"; do
        [ -f "$sf_cfg" ] || continue
        [ -r "$sf_cfg" ] || return 1
        sf_venv=${sf_bin%/*}
        while IFS= read -r sf_line || [ -n "$sf_line" ]; do
            case $sf_line in *=*) ;; *) continue ;; esac
            sf_key=${sf_line%%=*} sf_val=${sf_line#*=}
            sf_key=${sf_key#"${sf_key%%[![:space:]]*}"}
            sf_key=${sf_key%"${sf_key##*[![:space:]]}"}
            sf_val=${sf_val#"${sf_val%%[![:space:]]*}"}
            sf_val=${sf_val%"${sf_val##*[![:space:]]}"}
            case $sf_key in
            include-system-site-packages) case $sf_val in [Tt][Rr][Uu][Ee]) sf_system=true ;; *) sf_system= ;; esac ;;
            home) sf_home=$sf_val ;;
            esac
        done <"$sf_cfg"
        break
    done
    # The base prefix (where the standard library lives): above the venv's home, else above the interpreter's real
    # file; its lib/ or lib64/ (Fedora's platlibdir) holds pythonX.Y/os.py.
    if [ -n "$sf_venv" ]; then
        [ -n "$sf_home" ] || return 1
        sf_norm "$sf_home"
    else
        find_tool readlink
        [ -n "$T" ] || return 1
        sf_real=$("$T" -f -- "$sf_exe" 2>/dev/null) || return 1
        sf_norm "${sf_real%/*}"
    fi
    sf_base=${SF_NORM%/*}
    if [ -f "$sf_base/lib/python$SF_XY/os.py" ]; then
        SF_PLAT=lib
    elif [ -f "$sf_base/lib64/python$SF_XY/os.py" ]; then
        SF_PLAT=lib64
    else
        return 1
    fi
    SF_DEBIAN=
    [ -d "$sf_base/lib/python3/dist-packages" ] && SF_DEBIAN=yes  # Debian's and Ubuntu's python: dist-packages
    # sys.path: PYTHONPATH (made absolute, empty entries dropped), the venv's site folders, the user site, the base's.
    sf_ifs=$IFS
    IFS=:
    for sf_e in ${PYTHONPATH-}; do
        [ -z "$sf_e" ] || { sf_norm "$sf_e"; SF_ROOTS=$SF_ROOTS$SF_NORM$NL; }
    done
    IFS=$sf_ifs
    [ -z "$sf_venv" ] || sf_prefix_sites "$sf_venv" venv
    if [ -z "$sf_venv" ] || [ -n "$sf_system" ]; then
        # Fedora's site.py adds /usr/local's folders to a system python's: not read here.
        [ "$SF_PLAT" = lib ] || return 1
        if [ -z "${PYTHONNOUSERSITE-}" ]; then
            if [ -n "${PYTHONUSERBASE-}" ]; then
                sf_norm "$PYTHONUSERBASE/lib/python$SF_XY/site-packages"
            elif [ -n "${HOME-}" ]; then
                sf_norm "$HOME/.local/lib/python$SF_XY/site-packages"
            else
                return 1
            fi
            sf_site "$SF_NORM"
        fi
        sf_prefix_sites "$sf_base" "$sf_venv"
    fi
    # torch must be found by its files (else the interpreter is asked: it knows finders and editable installs).
    sf_package torch || return 1
    [ -n "$sf_pdir" ] || return 1
    sf_torch=$sf_pdir
    sf_package torch_npu || return 1
    sf_nccl "$sf_torch" || return 1
    native stack_files "read $sf_exe's files: -V, pyvenv.cfg, sys.path's packages" \
        "executable $sf_exe${NL}version $sf_v$NL$SF_LINES"
    sf_ifs=$IFS
    IFS=$NL
    for sf_f in $SF_FILES; do put_file "$sf_f" small; done
    IFS=$sf_ifs
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
            # @vendor-pci-ids@ (each vendor's ids: accelstack.facts.probe writes `ID | ID) SEEN_<vendor>=yes ;;`)
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

    # Each vendor's part (vendors/<name>/probe.sh), in the vendors' order: accelstack.facts.probe puts them here.
    # @vendor-probes@

    # The python3 on PATH, which the validators run on, without starting an interpreter; then the stack's python.
    ON_PATH=path
    tool probe_python "" python3 -V
    ON_PATH=
    [ "$rc" = missing ] && printf '%s note %s\n' "$M" "python3 not found on PATH: the validators need it"
    find_tool "$PY"
    py_path=$T
    if [ -z "$py_path" ]; then
        printf '%s missing %s %s\n%s\n' "$M" stack_python "$PY -c <stack snippet>" "$PY"
    elif ! stack_files "$py_path"; then
        run stack_python "$PY -c <stack snippet>" "$STACK_TO" "$py_path" -c "$STACK_SNIPPET"
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
