#!/bin/bash
# install_containers.sh <enroot version> <pyxis version>
# Container jobs on Slurm: NVIDIA enroot (unprivileged container runtime) and the pyxis SPANK plugin, which
# adds `srun --container-image=...`. What and how follow AWS's HyperPod reference
# (base-config/utils/install_enroot_pyxis.sh): enroot's .deb packages from its GitHub release, pyxis built
# against /opt/slurm/include, pyxis.conf included from plugstack.conf by its full path (configless Slurm
# cannot expand a wildcard include: base-config/utils/slurm_fix_plugstackconf.sh), ConstrainDevices=yes in
# cgroup.conf (NVIDIA/pyxis issue 47), and enroot's runtime and data on local disk, its layer cache on /fsx.
# Every download and build is checked: a failure fails node creation.
set -euo pipefail

enroot_version=$1 pyxis_version=$2
ROOT=${TRAINSTACK_ROOT:-}
slurm=$ROOT/opt/slurm
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

apt_install() {
  local attempt
  for attempt in 1 2 3 4 5; do
    if apt-get -y -o DPkg::Lock::Timeout=120 install "$@"; then return 0; fi
    echo "[trainstack] apt-get install $* failed (attempt $attempt), retrying in 10 s"
    sleep 10
  done
  echo "[trainstack] could not install $*" >&2
  return 1
}

download() {
  # --fail turns an HTTP error (a wrong version) into a failure; --retry-all-errors also retries DNS errors,
  # which HyperPod nodes can see while systemd-resolved restarts early in the lifecycle (AWS's reference
  # on_create.sh waits 30 s for it).
  local url=$1 out=$2
  if ! curl --fail --silent --show-error --location --retry 5 --retry-delay 5 --retry-all-errors --output "$out" "$url"; then
    echo "[trainstack] download failed: $url" >&2
    return 1
  fi
}

if [[ ! -d $slurm/include ]]; then
  echo "[trainstack] $slurm/include missing: cannot build pyxis against this Slurm" >&2
  exit 1
fi

updated=false
for attempt in 1 2 3 4 5; do
  if apt-get -y -o DPkg::Lock::Timeout=120 update; then
    updated=true
    break
  fi
  echo "[trainstack] apt-get update failed (attempt $attempt), retrying in 10 s"
  sleep 10
done
if [[ $updated != true ]]; then
  echo "[trainstack] apt-get update failed 5 times: no package index, nothing can be installed" >&2
  exit 1
fi
apt_install squashfs-tools parallel fuse-overlayfs squashfuse

arch=$(dpkg --print-architecture)
release=https://github.com/NVIDIA/enroot/releases/download/v${enroot_version}
for package in enroot enroot+caps; do
  download "$release/${package}_${enroot_version}-1_${arch}.deb" "$work/${package}_${enroot_version}-1_${arch}.deb"
done
apt_install "$work/enroot_${enroot_version}-1_${arch}.deb" "$work/enroot+caps_${enroot_version}-1_${arch}.deb"

download "https://github.com/NVIDIA/pyxis/archive/refs/tags/v${pyxis_version}.tar.gz" "$work/pyxis.tar.gz"
tar -xzf "$work/pyxis.tar.gz" -C "$work"
make -C "$work/pyxis-${pyxis_version}" CPPFLAGS="-I $slurm/include" -j "$(nproc)"
make -C "$work/pyxis-${pyxis_version}" CPPFLAGS="-I $slurm/include" install
mkdir -p "$slurm/etc/plugstack.conf.d"
ln -sfn /usr/local/share/pyxis/pyxis.conf "$slurm/etc/plugstack.conf.d/pyxis.conf"
include="include /opt/slurm/etc/plugstack.conf.d/pyxis.conf"
touch "$slurm/etc/plugstack.conf"
grep -qxF "$include" "$slurm/etc/plugstack.conf" || echo "$include" >>"$slurm/etc/plugstack.conf"
if [[ -f $slurm/etc/cgroup.conf ]] && ! grep -q '^ConstrainDevices' "$slurm/etc/cgroup.conf"; then
  echo "ConstrainDevices=yes" >>"$slurm/etc/cgroup.conf"
fi

# Local disk for container root file systems: the NVMe instance store when the type has one, else the extra
# EBS volume HyperPod mounts at /opt/sagemaker. Image layers are cached on /fsx when it is mounted.
if mountpoint -q "$ROOT/opt/dlami/nvme"; then local_disk=/opt/dlami/nvme; else local_disk=/opt/sagemaker; fi
cache=$local_disk/enroot/cache
if mountpoint -q "$ROOT/fsx"; then cache=/fsx/enroot/cache; fi
for dir in "$local_disk/enroot" "$local_disk/enroot/data" "$local_disk/enroot/tmp" "$cache"; do
  mkdir -p "$ROOT$dir"
  chmod 1777 "$ROOT$dir"
done
mkdir -p "$ROOT/etc/enroot"
# enroot configuration keys: NVIDIA/enroot doc/configuration.md.
cat >"$ROOT/etc/enroot/enroot.conf" <<CONF
# Written by trainstack's install_containers.sh
ENROOT_RUNTIME_PATH        $local_disk/enroot/user-\$(id -u)
ENROOT_DATA_PATH           $local_disk/enroot/data/user-\$(id -u)
ENROOT_TEMP_PATH           $local_disk/enroot/tmp
ENROOT_CACHE_PATH          $cache
ENROOT_ROOTFS_WRITABLE     yes
CONF
echo "[trainstack] enroot $enroot_version and pyxis $pyxis_version installed; containers on $local_disk"
