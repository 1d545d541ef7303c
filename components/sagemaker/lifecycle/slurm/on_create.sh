#!/bin/bash
# HyperPod (Slurm orchestrator) lifecycle entry point, run as root once per node at creation (and again on every
# node of a group by `update-cluster-software`), from the directory HyperPod downloaded the lifecycle prefix into.
# It reads:
#   provisioning_parameters.json   written by trainstack: groups, FSx DNS and mount name, root squash's identity,
#                                  and the settings of sagemaker.hyperpod.slurm (containers, accounting, homes, users)
#   $SAGEMAKER_RESOURCE_CONFIG_PATH (default /opt/ml/config/resource_config.json), written by HyperPod: every
#                                  instance group with its instances' CustomerIpAddress
# and runs one script per step. Every step's failure fails node creation (HyperPod treats a non-zero exit of
# on_create as a failed node), and the step's name and exit code are the last lines of the lifecycle log
# (/var/log/provision/provisioning.log, also in CloudWatch under /aws/sagemaker/Clusters/<cluster>/<id>).
# Each step is its own `bash` process, so `set -e` holds inside it: a step never half-fails silently.
# docs/hyperpod-slurm.md lists the steps, and which of them tests/lifecycle/ runs against real Slurm daemons.
set -euo pipefail

cd "$(dirname "$0")"
LOG=/var/log/provision/provisioning.log
mkdir -p "$(dirname "$LOG")"
exec > >(tee -a "$LOG") 2>&1
echo "[trainstack] on_create (slurm) start $(date --iso-8601=seconds)"

PARAMS=provisioning_parameters.json
RESOURCES=${SAGEMAKER_RESOURCE_CONFIG_PATH:-/opt/ml/config/resource_config.json}
# AWS's reference on_create.sh keeps a failed node up briefly so its log reaches CloudWatch before HyperPod
# terminates it (aws-samples/awsome-distributed-training, 7.sagemaker-hyperpod-eks/.../on_create.sh: sleep 60).
GRACE_SECONDS=${TRAINSTACK_FAILURE_GRACE_SECONDS:-60}

fail() {
  echo "[trainstack] on_create (slurm) FAILED: $*"
  echo "[trainstack] node creation fails; keeping the node up ${GRACE_SECONDS} s so this log reaches CloudWatch"
  sync
  sleep "$GRACE_SECONDS"
  exit 1
}

# step <name> <command...>: run one step, fail node creation with its name and exit code if it fails.
step() {
  local name=$1
  shift
  echo "[trainstack] step $name: start"
  local status=0
  "$@" || status=$?
  if ((status != 0)); then
    fail "step $name exited $status"
  fi
  echo "[trainstack] step $name: done"
}

# The /fsx work runs as root squash's identity with no privilege over files: what FSx for Lustre grants root on
# this node when root squash is on (FSx for Lustre User Guide, "Lustre root squash": root is mapped to the
# squash UID:GID). It keeps CAP_SETUID and CAP_SETGID only, to act as each user in their home. So the step behaves
# the same with and without squash, and one that needed root's powers on the shared file system would fail in
# every environment, dev included, not only where squash is on. The script comes on stdin: the bundle directory
# need not be readable by that identity.
# (step runs it under `||`, where set -e is off: the status is passed on explicitly.)
fsx_layout() {
  local users status=0
  users=$(mktemp)
  chmod 644 "$users"
  python3 node_config.py fsx-users "$PARAMS" >"$users" || status=$?
  ((status != 0)) || setpriv --reuid="$FSX_SQUASH_UID" --regid="$FSX_SQUASH_GID" --clear-groups \
    --inh-caps=-all,+setuid,+setgid --ambient-caps=-all,+setuid,+setgid --bounding-set=-all,+setuid,+setgid \
    bash -s -- "$users" "$HOMES_ON_LUSTRE" "$CONTAINERS" "$ADDRESS" <setup_fsx.sh || status=$?
  rm -f "$users"
  return "$status"
}

[[ -f $PARAMS ]] || fail "$PARAMS is missing from the lifecycle bundle"
[[ -f $RESOURCES ]] || fail "$RESOURCES not found: HyperPod did not provide the cluster layout"
write_node_env() { python3 node_config.py env "$PARAMS" "$RESOURCES" >node.env; }
step node-config write_node_env
# shellcheck source=/dev/null
source ./node.env
echo "[trainstack] role=$ROLE group=$GROUP address=$ADDRESS controllers=$CONTROLLERS"

FSX=0
if [[ -n $FSX_DNS_NAME ]]; then
  FSX=1
  if [[ $HOLD_LUSTRE_CLIENT == 1 ]]; then
    step hold-packages bash hold_packages.sh
  fi
  step mount-fsx bash mount_fsx.sh "$FSX_DNS_NAME" "$FSX_MOUNT_NAME" /fsx "$FSX_ROOT_SQUASH"
fi
if [[ $ROLE == controller ]]; then
  step slurm-conf bash wait_for_slurm_conf.sh "$CONTROLLERS"
  if [[ $ACCOUNTING == 1 ]]; then
    step accounting bash setup_accounting.sh configure
  fi
fi
step users bash setup_users.sh "$PARAMS" "$HOMES_ON_LUSTRE"
if [[ $FSX == 1 ]]; then
  step fsx-layout fsx_layout
  step ssh-known-hosts bash trust_cluster_hosts.sh
fi
if [[ $CONTAINERS == 1 ]]; then
  step containers bash install_containers.sh "$ENROOT_VERSION" "$PYXIS_VERSION" "$NVIDIA" "$FSX"
fi
step start-slurm bash start_slurm.sh "$ROLE" "$CONTROLLERS" "$FSX"
if [[ $ROLE == controller && $ACCOUNTING == 1 ]]; then
  step accounting-users bash setup_accounting.sh users "$PARAMS"
  step accounting-backup bash setup_accounting.sh backup-timer
fi
step validation-jobs bash install_validation.sh
echo "[trainstack] on_create (slurm) done $(date --iso-8601=seconds)"
