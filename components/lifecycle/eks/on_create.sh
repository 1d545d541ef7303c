#!/bin/bash
# HyperPod (EKS orchestrator) lifecycle entry point, run as root once per node at creation.
#
# HyperPod's EKS AMI keeps containerd images and kubelet pod data on the small root volume. Training images
# are tens of GiB, so move both onto the largest local disk: the NVMe instance store that HyperPod mounts at
# /opt/dlami/nvme when the type has one (p4d, p5, ...), else the extra EBS volume at /opt/sagemaker.
# Bind mounts (recorded in /etc/fstab) keep the original paths, so containerd and kubelet need no new config.
set -euo pipefail

LOG=/var/log/provision/provisioning.log
mkdir -p "$(dirname "$LOG")"
exec > >(tee -a "$LOG") 2>&1
echo "[trainstack] on_create (eks) start $(date --iso-8601=seconds)"

wait_for_mount() {
  local path=$1
  for _ in $(seq 1 24); do
    if mountpoint -q "$path"; then return 0; fi
    sleep 5
  done
  return 1
}

pick_disk() {
  if wait_for_mount /opt/dlami/nvme; then echo /opt/dlami/nvme; return 0; fi
  if wait_for_mount /opt/sagemaker; then echo /opt/sagemaker; return 0; fi
  return 1
}

relocate() {
  # relocate <path> <target>: copy existing content, then bind-mount target over path (idempotent).
  local path=$1 target=$2
  mkdir -p "$path" "$target"
  if findmnt --noheadings --target "$path" --output TARGET | grep -qx "$path"; then
    echo "[trainstack] $path is already a mount point"
    return 0
  fi
  cp -a "$path/." "$target/"
  echo "$target $path none bind,nofail 0 0" >> /etc/fstab
  mount --bind "$target" "$path"
}

main() {
  local disk
  if ! disk=$(pick_disk); then
    echo "[trainstack] neither /opt/dlami/nvme nor /opt/sagemaker is mounted; leaving containerd on the root volume"
    return 0
  fi
  echo "[trainstack] moving containerd and kubelet data to $disk"
  local containerd_was_active=false
  if systemctl is-active --quiet containerd; then
    containerd_was_active=true
    systemctl stop containerd
  fi
  relocate /var/lib/containerd "$disk/containerd"
  relocate /var/lib/kubelet "$disk/kubelet"
  if [[ $containerd_was_active == true ]]; then
    systemctl start containerd
  fi
}

if ! main; then
  echo "[trainstack] on_create (eks) failed; keeping the node up 60 s so the log reaches CloudWatch"
  sync
  sleep 60
  exit 1
fi
echo "[trainstack] on_create (eks) done $(date --iso-8601=seconds)"
