# Ascend's part of the facts probe (accelstack/hostside/probes/facts_probe.sh puts each vendor's part where its
# vendors line is, in the probe's own function: its helpers put_file, tool, native, find_tool, and $SCOPE, $TO,
# $ROOT, $MACHINE, $NL and SEEN_<vendor> (yes when a PCI device of the vendor is on the bus) are there).
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
