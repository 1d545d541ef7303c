#!/bin/bash
# HyperPod (EKS orchestrator) lifecycle entry point, run as root once per node at creation.
#
# HyperPod's EKS AMI keeps containerd images and kubelet pod data on the small root volume. Training images
# are tens of GiB, so both move to the extra EBS volume HyperPod mounts at /opt/sagemaker (trainstack always
# configures one). The move is AWS's reference (aws-samples/awsome-distributed-training,
# 1.architectures/7.sagemaker-hyperpod-eks/LifecycleScripts/base-config/on_create_main.sh): the data is moved
# and the old path becomes a symbolic link to the new one. No bind mount with nofail: after a reboot such a
# mount can be missing while the empty directory under it hides the kubelet's state and the node goes
# NotReady. Here, a systemd drop-in (RequiresMountsFor=, systemd.unit(5)) holds containerd and the kubelet
# until the volume is mounted, so they never start on an empty directory.
# Every failure exits non-zero with a message in the lifecycle log: HyperPod treats that as a failed node.
# Tests run the script against a temporary root (TRAINSTACK_ROOT) with stub commands; in a node it is unset.
set -euo pipefail

ROOT=${TRAINSTACK_ROOT:-}
LOG=$ROOT/var/log/provision/provisioning.log
mkdir -p "$(dirname "$LOG")"
exec > >(tee -a "$LOG") 2>&1
echo "[trainstack] on_create (eks) start $(date --iso-8601=seconds)"

DISK=/opt/sagemaker
GRACE_SECONDS=${TRAINSTACK_FAILURE_GRACE_SECONDS:-60}

fail() {
  echo "[trainstack] on_create (eks) FAILED: $*"
  echo "[trainstack] node creation fails; keeping the node up ${GRACE_SECONDS} s so this log reaches CloudWatch"
  sync
  sleep "$GRACE_SECONDS"
  exit 1
}

# move_to_disk <path> <service>: move the data of <path> to the disk, link <path> to it, and make <service>
# wait for the disk. Called under `||`, where set -e is off: every command returns on failure itself.
move_to_disk() {
  local path=$1 service=$2 target=$DISK/${1##*/}
  if [[ -L $ROOT$path ]]; then
    echo "[trainstack] $path already links to $(readlink "$ROOT$path")"
    return 0
  fi
  mkdir -p "$ROOT$target" || return 1
  if [[ -d $ROOT$path ]]; then
    cp -a "$ROOT$path/." "$ROOT$target/" || return 1
    rm -rf "$ROOT$path" || return 1
  fi
  ln -s "$target" "$ROOT$path" || return 1
  mkdir -p "$ROOT/etc/systemd/system/$service.service.d" || return 1
  printf '[Unit]\nRequiresMountsFor=%s\n' "$DISK" >"$ROOT/etc/systemd/system/$service.service.d/trainstack-disk.conf" ||
    return 1
  echo "[trainstack] $path -> $target ($service waits for $DISK)"
}

mounted=false
for _ in $(seq 1 24); do
  if mountpoint -q "$ROOT$DISK"; then
    mounted=true
    break
  fi
  sleep 5
done
[[ $mounted == true ]] || fail "$DISK is not mounted after 120 s: HyperPod attaches the extra EBS volume there"

active=()
for service in kubelet containerd; do
  if systemctl is-active --quiet "$service"; then active+=("$service"); fi
done
for service in kubelet containerd; do
  systemctl stop "$service" || fail "could not stop $service"
done
move_to_disk /var/lib/containerd containerd || fail "moving /var/lib/containerd to $DISK failed"
move_to_disk /var/lib/kubelet kubelet || fail "moving /var/lib/kubelet to $DISK failed"
systemctl daemon-reload || fail "systemctl daemon-reload failed"
for service in containerd kubelet; do
  if [[ " ${active[*]} " == *" $service "* ]]; then
    systemctl start "$service" || fail "could not restart $service"
  fi
done
# GPUs only through a GPU request: the NVIDIA runtime ignores NVIDIA_VISIBLE_DEVICES in unprivileged containers and
# takes the devices the GPU Operator's device plugin passes as volume mounts (the same settings as the EKS GPU
# nodes' user data, components/userdata.py nvidia_runtime_script). Nodes without the NVIDIA toolkit have no GPUs.
RUNTIME_CONFIG=$ROOT/etc/nvidia-container-runtime/config.toml
if command -v nvidia-ctk >/dev/null; then
  nvidia-ctk config --in-place --config="$RUNTIME_CONFIG" \
    --set accept-nvidia-visible-devices-envvar-when-unprivileged=false \
    --set accept-nvidia-visible-devices-as-volume-mounts=true || fail "nvidia-ctk could not update $RUNTIME_CONFIG"
  for setting in accept-nvidia-visible-devices-envvar-when-unprivileged=false \
    accept-nvidia-visible-devices-as-volume-mounts=true; do
    grep -Eq "^${setting%%=*} *= *${setting#*=}\$" "$RUNTIME_CONFIG" || fail "$RUNTIME_CONFIG lacks $setting"
  done
  echo "[trainstack] NVIDIA runtime: devices only through the device plugin"
fi
echo "[trainstack] on_create (eks) done $(date --iso-8601=seconds)"
