#!/bin/bash
# mount_fsx.sh <fsx dns name> <lustre mount name> <mount point>
# Mounts FSx for Lustre (client preinstalled on the HyperPod Slurm AMI) and records it in /etc/fstab with the
# options the FSx for Lustre user guide gives for automatic mounting: _netdev and a systemd automount, so a
# reboot waits for the network instead of hanging. The file system must accept TCP 988 from this node's
# security group (the EFA group trainstack passes to HyperPod).
set -euo pipefail

dns=$1 mount_name=$2 mount_point=$3
source="${dns}@tcp:/${mount_name}"
options="relatime,flock,_netdev,x-systemd.automount,x-systemd.requires=network.service"

mkdir -p "$mount_point"
if ! grep -qs " $mount_point lustre " /etc/fstab; then
  echo "$source $mount_point lustre $options 0 0" >> /etc/fstab
fi
for attempt in $(seq 1 10); do
  if mountpoint -q "$mount_point" || mount -t lustre -o relatime,flock "$source" "$mount_point"; then
    chmod 1777 "$mount_point"
    echo "[trainstack] mounted $source at $mount_point"
    exit 0
  fi
  echo "[trainstack] mount of $source failed (attempt $attempt), retrying in 10 s"
  sleep 10
done
echo "[trainstack] could not mount $source"
exit 1
