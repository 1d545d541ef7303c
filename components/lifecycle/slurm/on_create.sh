#!/bin/bash
# HyperPod (Slurm orchestrator) lifecycle entry point, run as root once per node at creation, from the
# directory HyperPod downloaded the lifecycle prefix into. It reads:
#   provisioning_parameters.json  written by trainstack: controller/login/worker group names, FSx DNS and mount name
#   $SAGEMAKER_RESOURCE_CONFIG_PATH (default /opt/ml/config/resource_config.json), written by HyperPod: every
#                                 instance group with its instances' CustomerIpAddress
# then mounts FSx for Lustre at /fsx and starts the Slurm daemon this node's group calls for.
set -euo pipefail

cd "$(dirname "$0")"
LOG=/var/log/provision/provisioning.log
mkdir -p "$(dirname "$LOG")"
exec > >(tee -a "$LOG") 2>&1
echo "[trainstack] on_create (slurm) start $(date --iso-8601=seconds)"

PARAMS=provisioning_parameters.json
RESOURCES=${SAGEMAKER_RESOURCE_CONFIG_PATH:-/opt/ml/config/resource_config.json}

main() {
  if [[ ! -f $RESOURCES ]]; then
    echo "[trainstack] $RESOURCES not found: HyperPod did not provide the cluster layout"
    return 1
  fi
  # node_role.py prints: <role> <comma-separated controller addresses> <fsx dns name> <fsx mount name>
  local role controllers fsx_dns fsx_mount
  read -r role controllers fsx_dns fsx_mount < <(python3 node_role.py "$PARAMS" "$RESOURCES")
  echo "[trainstack] role=$role controllers=$controllers"

  if [[ $fsx_dns != "-" ]]; then
    bash mount_fsx.sh "$fsx_dns" "$fsx_mount" /fsx
  fi
  bash start_slurm.sh "$role" "$controllers"
}

if ! main; then
  echo "[trainstack] on_create (slurm) failed; keeping the node up 60 s so the log reaches CloudWatch"
  sync
  sleep 60
  exit 1
fi
echo "[trainstack] on_create (slurm) done $(date --iso-8601=seconds)"
