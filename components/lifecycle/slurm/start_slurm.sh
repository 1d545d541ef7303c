#!/bin/bash
# start_slurm.sh <controller|login|compute> <controller addresses, comma-separated>
# HyperPod's Slurm agent writes slurm.conf on the controller; slurmd on login and compute nodes fetches it
# from the controller ("configless" Slurm, slurmd --conf-server). Only the daemon the role needs runs.
set -euo pipefail

role=$1 controllers=$2
slurm_conf=${SLURM_CONF:-/opt/slurm/etc/slurm.conf}

case $role in
  controller)
    # Wait (up to 5 min) until HyperPod has written a slurm.conf that names this controller.
    for _ in $(seq 1 60); do
      if [[ -f $slurm_conf ]] && grep -q "${controllers%%,*}" "$slurm_conf"; then break; fi
      sleep 5
    done
    systemctl disable --now slurmd 2>/dev/null || true
    systemctl enable --now slurmctld
    ;;
  login | compute)
    systemctl disable --now slurmctld 2>/dev/null || true
    mkdir -p /etc/systemd/system/slurmd.service.d
    cat > /etc/systemd/system/slurmd.service.d/trainstack.conf <<CONF
[Service]
Environment="SLURMD_OPTIONS=--conf-server ${controllers}"
CONF
    systemctl daemon-reload
    systemctl enable --now slurmd
    ;;
  *)
    echo "unknown role $role" >&2
    exit 2
    ;;
esac
echo "[trainstack] slurm started for role $role"
