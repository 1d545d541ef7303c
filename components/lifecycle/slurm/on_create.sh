#!/bin/bash
# HyperPod (Slurm orchestrator) lifecycle entry point, run as root once per node at creation, from the
# directory HyperPod downloaded the lifecycle prefix into. It reads:
#   provisioning_parameters.json   written by trainstack: groups, FSx DNS and mount name, and the settings of
#                                  sagemaker.hyperpod.slurm (containers, accounting, homes, users, holds)
#   $SAGEMAKER_RESOURCE_CONFIG_PATH (default /opt/ml/config/resource_config.json), written by HyperPod: every
#                                  instance group with its instances' CustomerIpAddress
# and runs one script per step. Every step's failure fails node creation (HyperPod treats a non-zero exit of
# on_create as a failed node), and the step's name and exit code are the last lines of the lifecycle log
# (/var/log/provision/provisioning.log, also in CloudWatch under /aws/sagemaker/Clusters/<cluster>/<id>).
# Each step is its own `bash` process, so `set -e` holds inside it: a step never half-fails silently.
#
# Tests run the scripts against a temporary root (TRAINSTACK_ROOT) with stub commands; in a node it is unset.
set -euo pipefail

cd "$(dirname "$0")"
ROOT=${TRAINSTACK_ROOT:-}
LOG=$ROOT/var/log/provision/provisioning.log
mkdir -p "$(dirname "$LOG")"
exec > >(tee -a "$LOG") 2>&1
echo "[trainstack] on_create (slurm) start $(date --iso-8601=seconds)"

PARAMS=provisioning_parameters.json
RESOURCES=${SAGEMAKER_RESOURCE_CONFIG_PATH:-$ROOT/opt/ml/config/resource_config.json}
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

[[ -f $PARAMS ]] || fail "$PARAMS is missing from the lifecycle bundle"
[[ -f $RESOURCES ]] || fail "$RESOURCES not found: HyperPod did not provide the cluster layout"
write_node_env() { python3 node_config.py env "$PARAMS" "$RESOURCES" >node.env; }
step node-config write_node_env
# shellcheck source=/dev/null
source ./node.env
echo "[trainstack] role=$ROLE group=$GROUP controllers=$CONTROLLERS"

if [[ -n $FSX_DNS_NAME ]]; then
  if [[ $HOLD_LUSTRE_CLIENT == 1 ]]; then
    step hold-lustre-client bash hold_lustre_client.sh
  fi
  step mount-fsx bash mount_fsx.sh "$FSX_DNS_NAME" "$FSX_MOUNT_NAME" /fsx
fi
if [[ $ROLE == controller ]]; then
  step slurm-conf bash wait_for_slurm_conf.sh "$CONTROLLERS"
  if [[ $ACCOUNTING == 1 ]]; then
    step accounting bash setup_accounting.sh configure
  fi
fi
step users bash setup_users.sh "$PARAMS" "$HOMES_ON_LUSTRE"
if [[ $CONTAINERS == 1 ]]; then
  step containers bash install_containers.sh "$ENROOT_VERSION" "$PYXIS_VERSION"
fi
step start-slurm bash start_slurm.sh "$ROLE" "$CONTROLLERS"
if [[ $ROLE == controller && $ACCOUNTING == 1 ]]; then
  step accounting-users bash setup_accounting.sh users "$PARAMS"
fi
step validation-jobs bash install_validation.sh
echo "[trainstack] on_create (slurm) done $(date --iso-8601=seconds)"
