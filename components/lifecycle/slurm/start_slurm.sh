#!/bin/bash
# start_slurm.sh <controller|login|compute> <controller addresses, comma-separated>
# HyperPod's Slurm agent writes slurm.conf on the controller; slurmd on login and compute nodes fetches it
# from the controller ("configless" Slurm, slurmd --conf-server). Only the daemon the role needs runs.
# A login node's slurmd fetches the configuration and exits (slurm.conf lists no login nodes: AWS's
# reference start_slurm.sh), so only the controller and compute daemons are checked to be running.
set -euo pipefail

role=$1 controllers=$2
ROOT=${TRAINSTACK_ROOT:-}

case $role in
  controller)
    # The AMI installs both daemons; a controller that is not a compute node must not run slurmd.
    systemctl disable --now slurmd || echo "[trainstack] no slurmd unit to disable"
    # restart, not start: a daemon HyperPod already started must read accounting.conf and plugstack.conf.
    systemctl enable slurmctld
    systemctl restart slurmctld
    systemctl is-active --quiet slurmctld || {
      echo "[trainstack] slurmctld is not running: see journalctl -u slurmctld" >&2
      exit 1
    }
    ;;
  login | compute)
    systemctl disable --now slurmctld || echo "[trainstack] no slurmctld unit to disable"
    mkdir -p "$ROOT/etc/systemd/system/slurmd.service.d"
    cat >"$ROOT/etc/systemd/system/slurmd.service.d/trainstack.conf" <<CONF
[Service]
Environment="SLURMD_OPTIONS=--conf-server ${controllers}"
CONF
    systemctl daemon-reload
    systemctl enable slurmd
    systemctl restart slurmd
    if [[ $role == compute ]] && ! systemctl is-active --quiet slurmd; then
      echo "[trainstack] slurmd is not running: see journalctl -u slurmd" >&2
      exit 1
    fi
    ;;
  *)
    echo "[trainstack] unknown role $role" >&2
    exit 2
    ;;
esac
echo "[trainstack] slurm started for role $role"
