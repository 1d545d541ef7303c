#!/bin/bash
# mount_fsx.sh <fsx dns name> <lustre mount name> <mount point>
# Mounts FSx for Lustre and makes the mount survive reboots (HyperPod's node recovery reboots nodes).
# - LNet up first: load lnet and lustre, `lctl network up` (AWS's HyperPod reference mount_fsx.sh does the
#   same); the modules also go into modules-load.d so they are loaded at every boot.
# - /etc/fstab with the FSx for Lustre user guide's automatic-mount options (_netdev, x-systemd.automount)
#   and x-systemd.requires=network-online.target: the guide's network.service does not exist on the Ubuntu-
#   based HyperPod AMI, and a requirement on a missing unit fails the mount; the reference uses
#   network-online.target too.
# - The mount is verified by writing and removing a file; every failure exits non-zero with a message.
# The file system must accept TCP 988 from this node's security group (the EFA group trainstack passes).
set -euo pipefail

if (($# != 3)); then
  echo "usage: mount_fsx.sh <fsx dns name> <lustre mount name> <mount point>" >&2
  exit 2
fi
dns=$1 mount_name=$2 mount_point=$3
ROOT=${TRAINSTACK_ROOT:-}
source="${dns}@tcp:/${mount_name}"
options="noatime,flock,_netdev,x-systemd.automount,x-systemd.requires=network-online.target"
target=$ROOT$mount_point

for module in lnet lustre; do
  if ! modprobe "$module"; then
    echo "[trainstack] modprobe $module failed: the Lustre client modules do not match the running kernel $(uname -r)" >&2
    exit 1
  fi
done
if ! lctl network up; then
  echo "[trainstack] lctl network up failed: LNet has no network, Lustre cannot mount" >&2
  exit 1
fi
mkdir -p "$ROOT/etc/modules-load.d"
printf 'lnet\nlustre\n' >"$ROOT/etc/modules-load.d/trainstack-lustre.conf"

# One fstab line for the mount point, ours (a rerun or an old entry with other options is replaced).
mkdir -p "$target" "$ROOT/etc"
touch "$ROOT/etc/fstab"
awk -v mp="$mount_point" '$2 != mp' "$ROOT/etc/fstab" >"$ROOT/etc/fstab.trainstack"
echo "$source $mount_point lustre $options 0 0" >>"$ROOT/etc/fstab.trainstack"
mv "$ROOT/etc/fstab.trainstack" "$ROOT/etc/fstab"
systemctl daemon-reload # systemd-fstab-generator makes the .mount/.automount units from the new line

mounted=false
for attempt in $(seq 1 10); do
  if mountpoint -q "$target" || mount -t lustre -o noatime,flock "$source" "$target"; then
    mounted=true
    break
  fi
  echo "[trainstack] mount of $source failed (attempt $attempt), retrying in 10 s"
  sleep 10
done
if [[ $mounted != true ]]; then
  echo "[trainstack] could not mount $source at $mount_point after 10 attempts (check TCP 988 from this node)" >&2
  exit 1
fi
probe="$target/.trainstack-probe-$(hostname)"
if ! touch "$probe" || ! rm -f "$probe"; then
  echo "[trainstack] $mount_point is mounted but not writable" >&2
  exit 1
fi
chmod 1777 "$target"
echo "[trainstack] mounted $source at $mount_point (fstab: $options)"
