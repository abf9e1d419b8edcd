# AMD's part of the facts probe (accelstack/hostside/probes/facts_probe.sh puts each vendor's part where its
# vendors line is, in the probe's own function: its helpers put_file, tool, native, find_tool, and $SCOPE, $TO,
# $ROOT, $MACHINE, $NL and SEEN_<vendor> (yes when a PCI device of the vendor is on the bus) are there).
# AMD: the DKMS amdgpu module's version and ROCm's release file; amd-smi (a python program: about a second) only
# for "host", where it is installed or an AMD GPU is on the bus (its absence is then worth reporting), and
# rocm-smi where amd-smi is not there (ROCm before 6.0).
for path in /sys/module/amdgpu/version /opt/rocm/.info/version; do put_file "$path" small; done
if [ "$SCOPE" != components ]; then
    find_tool amd-smi
    if [ -n "$T" ] || [ -n "$SEEN_amd" ]; then
        tool amd_smi_static "$TO" amd-smi static --json
        if [ "$rc" = missing ]; then
            find_tool rocm-smi
            [ -z "$T" ] || tool rocm_smi "$TO" rocm-smi --showproductname --showdriverversion --json
        fi
    fi
fi
