#!/usr/bin/env bash
# ch03/scripts/os_tuning.sh: the host settings chapter 3 recommends for a GPU node, as commands.
#
# DOCUMENTATION. Read it; run it only on a machine that is yours. It is never run by the tests,
# and never on shared or lent machines: every setting below changes the whole host for every
# user and job on it, and some need a reboot to undo.
#
# By default it only PRINTS the commands (a dry run). With --apply, as root, it runs them.
#   bash ch03/scripts/os_tuning.sh            # print what it would do
#   sudo bash ch03/scripts/os_tuning.sh --apply
#
# `python -m cli.aisp hw tuning-check` reads each of these settings (without changing any)
# and says which differ from the recommendation. Each step says how to undo it.
set -euo pipefail

apply=false
if [[ "${1:-}" == "--apply" ]]; then
    apply=true
    if [[ $EUID -ne 0 ]]; then
        echo "os_tuning.sh --apply changes host settings and needs root" >&2
        exit 1
    fi
elif [[ $# -gt 0 ]]; then
    echo "usage: bash ch03/scripts/os_tuning.sh [--apply]" >&2
    exit 2
fi

step() {  # step "why" command...: print it; run it under --apply
    echo "# $1"
    shift
    echo "$*"
    if $apply; then
        eval "$*"
    fi
    echo
}

$apply || echo "# dry run: nothing is changed (pass --apply, as root, to run these)"
echo

# GPU: persistence mode keeps the driver's state loaded between processes, so a new job does
# not pay driver initialization. Undo: nvidia-smi -pm 0 (or stop nvidia-persistenced).
step "GPU persistence mode on (nvidia-persistenced does the same as a service)" \
    "nvidia-smi -pm 1"

# GPU: application clocks back at their defaults, in case someone lowered them.
# (Locking clocks with nvidia-smi -lgc is for A/B experiments only; -rgc unlocks them.)
step "GPU application clocks at their defaults" \
    "nvidia-smi -rac"

# CPU: the performance governor keeps the cores that launch kernels and feed data at full
# clock. Undo: the previous governor (often schedutil, ondemand or powersave).
step "CPU frequency governor: performance on every CPU" \
    "for g in /sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor; do echo performance > \"\$g\"; done"

# Memory: transparent huge pages for large host buffers (training hosts). Latency-critical
# inference hosts often prefer madvise or never. Undo: echo madvise (or never) instead.
step "transparent huge pages: always" \
    "echo always > /sys/kernel/mm/transparent_hugepage/enabled"

# Memory: automatic NUMA balancing off, for jobs that bind their threads and memory to the
# GPU's node themselves. Undo: echo 1 > /proc/sys/kernel/numa_balancing
step "automatic NUMA balancing off" \
    "echo 0 > /proc/sys/kernel/numa_balancing"

# Limits: unlimited locked memory for new login sessions (RDMA registration, mlock).
# Containers get theirs from the runtime (docker run --ulimit memlock=-1).
# Undo: delete the file.
step "locked-memory limit unlimited for new sessions" \
    "printf '* soft memlock unlimited\n* hard memlock unlimited\n' > /etc/security/limits.d/90-aisp-memlock.conf"

# None of the /sys and /proc settings above survives a reboot; make them permanent with your
# distribution's tools (a tuned profile, sysctl.d, a systemd unit), after measuring that they help.
