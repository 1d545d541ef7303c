#!/bin/bash
# mount_fsx.sh <fsx dns name> <lustre mount name> <mount point> <root squash UID:GID, empty when off>
# Mounts FSx for Lustre and makes the mount survive reboots (HyperPod's node recovery reboots nodes).
# - LNet up first: load lnet and lustre, `lctl network up` (AWS's HyperPod reference mount_fsx.sh does the
#   same); the modules also go into modules-load.d so they are loaded at every boot.
# - /etc/fstab with the FSx for Lustre user guide's automatic-mount options (_netdev, x-systemd.automount)
#   and x-systemd.requires=network-online.target: the guide's network.service does not exist on the Ubuntu-
#   based HyperPod AMI, and a requirement on a missing unit fails the mount; the reference uses
#   network-online.target too.
# - The file system's root directory must be world-writable and sticky (1777, as /tmp): users create their own
#   homes there (setup_fsx.sh), since root may not (root squash). Without root squash root sets the mode here;
#   with it root cannot, and an administrator sets it once from a client exempt from squash
#   (storage.fsx.no_squash_nids; docs/hyperpod-slurm.md, "/fsx under root squash").
# Every failure exits non-zero with a message. The file system must accept TCP 988 from this node's security
# group (the EFA group trainstack passes).
set -euo pipefail

if (($# != 4)); then
  echo "usage: mount_fsx.sh <fsx dns name> <lustre mount name> <mount point> <root squash UID:GID or empty>" >&2
  exit 2
fi
dns=$1 mount_name=$2 mount_point=$3 squash=$4
source="${dns}@tcp:/${mount_name}"
options="noatime,flock,_netdev,x-systemd.automount,x-systemd.requires=network-online.target"

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
mkdir -p /etc/modules-load.d
printf 'lnet\nlustre\n' >/etc/modules-load.d/trainstack-lustre.conf

# One fstab line for the mount point, ours (a rerun or an old entry with other options is replaced).
mkdir -p "$mount_point"
touch /etc/fstab
awk -v mp="$mount_point" '$2 != mp' /etc/fstab >/etc/fstab.trainstack
echo "$source $mount_point lustre $options 0 0" >>/etc/fstab.trainstack
mv /etc/fstab.trainstack /etc/fstab
systemctl daemon-reload # systemd-fstab-generator makes the .mount/.automount units from the new line

mounted=false
for attempt in $(seq 1 10); do
  if mountpoint -q "$mount_point" || mount -t lustre -o noatime,flock "$source" "$mount_point"; then
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

mode=$(stat --format=%a "$mount_point")
if [[ $mode != 1777 ]]; then
  if [[ -n $squash ]]; then
    echo "[trainstack] $mount_point has mode $mode: users cannot create their homes there, and root cannot change" \
      "it (FSx squashes root to $squash). Once, as root on a client listed in storage.fsx.no_squash_nids:" \
      "mount the file system and run chmod 1777 on its root directory; then re-create this node" >&2
    exit 1
  fi
  chmod 1777 "$mount_point"
  echo "[trainstack] $mount_point was mode $mode, now 1777 (no root squash on this file system)"
fi
echo "[trainstack] mounted $source at $mount_point (fstab: $options)"
