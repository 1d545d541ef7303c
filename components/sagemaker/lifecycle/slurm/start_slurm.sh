#!/bin/bash
# start_slurm.sh <controller|login|compute> <controller addresses, comma-separated> <fsx mounted: 1|0>
# HyperPod's Slurm agent writes slurm.conf on the controller; slurmd on login and compute nodes fetches it
# from the controller ("configless" Slurm, slurmd --conf-server). Only the daemon the role needs runs.
# A login node's slurmd fetches the configuration and exits (slurm.conf lists no login nodes: AWS's
# reference start_slurm.sh), so only the controller and compute daemons are checked to be running.
# With FSx, slurmd requires the /fsx mount (RequiresMountsFor=, systemd.unit(5)): after a reboot it cannot start,
# and take jobs, before the file system that holds the users' homes is back.
set -euo pipefail

role=$1 controllers=$2 fsx=$3

case $role in
  controller)
    # The AMI installs both daemons; a controller that is not a compute node must not run slurmd.
    systemctl disable --now slurmd || echo "[trainstack] no slurmd unit to disable"
    # restart, not start: a daemon HyperPod already started must read accounting.conf and plugstack.conf.
    systemctl enable slurmctld
    systemctl restart slurmctld
    # grep without -q reads all of scontrol's output: an early exit would fail the pipeline (pipefail, SIGPIPE).
    for _ in $(seq 1 30); do
      if scontrol ping 2>&1 | grep 'is UP' >/dev/null; then
        echo "[trainstack] slurmctld answers"
        break
      fi
      sleep 2
    done
    if ! scontrol ping 2>&1 | grep 'is UP' >/dev/null; then
      echo "[trainstack] slurmctld does not answer scontrol ping: see journalctl -u slurmctld" >&2
      exit 1
    fi
    ;;
  login | compute)
    systemctl disable --now slurmctld || echo "[trainstack] no slurmctld unit to disable"
    mkdir -p /etc/systemd/system/slurmd.service.d
    {
      if [[ $fsx == 1 ]]; then printf '[Unit]\nRequiresMountsFor=/fsx\n\n'; fi
      printf '[Service]\nEnvironment="SLURMD_OPTIONS=--conf-server %s"\n' "$controllers"
    } >/etc/systemd/system/slurmd.service.d/trainstack.conf
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
