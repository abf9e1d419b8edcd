# NVIDIA's part of the facts probe (accelstack/hostside/probes/facts_probe.sh puts each vendor's part where its
# vendors line is, in the probe's own function: its helpers put_file, tool, native, find_tool, and $SCOPE, $TO,
# $ROOT, $MACHINE, $NL and SEEN_<vendor> (yes when a PCI device of the vendor is on the bus) are there).
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
