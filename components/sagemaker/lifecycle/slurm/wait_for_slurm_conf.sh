#!/bin/bash
# wait_for_slurm_conf.sh <controller addresses, comma-separated>
# On the controller, HyperPod's agent writes slurm.conf while the lifecycle scripts run. Wait for one that
# names this controller (as AWS's reference lifecycle_script.py does) and fail when none comes: without it
# slurmctld cannot start and accounting has no host to point at.
set -euo pipefail

controllers=$1
slurm_conf=/opt/slurm/etc/slurm.conf
wait_seconds=300 poll_seconds=10
for _ in $(seq 1 $((wait_seconds / poll_seconds))); do
  if [[ -f $slurm_conf ]] && grep -qF "${controllers%%,*}" "$slurm_conf"; then
    echo "[trainstack] $slurm_conf names controller ${controllers%%,*}"
    exit 0
  fi
  sleep "$poll_seconds"
done
if [[ -f $slurm_conf ]]; then
  echo "[trainstack] $slurm_conf does not name controller ${controllers%%,*} after ${wait_seconds} s" >&2
else
  echo "[trainstack] slurm.conf missing: HyperPod did not write $slurm_conf within ${wait_seconds} s" >&2
fi
exit 1
