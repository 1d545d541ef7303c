#!/bin/bash
# install_containers.sh <enroot version> <pyxis version> <nvidia node: 1|0> <fsx mounted: 1|0>
# Container jobs on Slurm: NVIDIA enroot (unprivileged container runtime) and the pyxis SPANK plugin, which
# adds `srun --container-image=...`. What and how follow AWS's HyperPod reference
# (base-config/utils/install_enroot_pyxis.sh): enroot's .deb packages from its GitHub release; pyxis built against
# /opt/slurm/include with CPPFLAGS in the environment, which pyxis's Makefile appends to its own
# (`CPPFLAGS := ... -DPYXIS_VERSION=... $(CPPFLAGS)`), where a CPPFLAGS on make's command line would replace them;
# pyxis.conf included from plugstack.conf by its full path (configless Slurm cannot expand a wildcard include:
# base-config/utils/slurm_fix_plugstackconf.sh); ConstrainDevices=yes in cgroup.conf (NVIDIA/pyxis issue 47).
# On NVIDIA nodes enroot's GPU hook needs nvidia-container-cli (libnvidia-container-tools): installed from NVIDIA's
# repository as the reference's utils/install_docker.sh does, when the AMI lacks it. Containers run on local disk:
# the NVMe instance store once dlami-nvme.service has mounted it (the reference waits for it: issue 427), else the
# EBS volume at /opt/sagemaker; each user's image cache is on /fsx, theirs alone (setup_fsx.sh).
# Every download and build is checked: a failure fails node creation.
set -euo pipefail

enroot_version=$1 pyxis_version=$2 nvidia=$3 fsx=$4
slurm=/opt/slurm
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

apt_update() {
  local attempt
  for attempt in 1 2 3 4 5; do
    if apt-get -y -o DPkg::Lock::Timeout=120 update; then return 0; fi
    echo "[trainstack] apt-get update failed (attempt $attempt), retrying in 10 s"
    sleep 10
  done
  echo "[trainstack] apt-get update failed 5 times: no package index, nothing can be installed" >&2
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

# NVIDIA's container toolkit repository (NVIDIA container toolkit install guide, "With apt"), its key in
# /etc/apt/keyrings, where keys an administrator adds belong (sources.list(5), Signed-By).
nvidia_container_cli() {
  if command -v nvidia-container-cli >/dev/null; then return 0; fi
  echo "[trainstack] nvidia-container-cli missing: installing libnvidia-container-tools from NVIDIA's repository"
  local keyring=/etc/apt/keyrings/nvidia-container-toolkit-keyring.gpg
  install -d -m 0755 /etc/apt/keyrings
  download https://nvidia.github.io/libnvidia-container/gpgkey "$work/nvidia.key"
  gpg --batch --yes --dearmor --output "$keyring" "$work/nvidia.key"
  download https://nvidia.github.io/libnvidia-container/stable/deb/nvidia-container-toolkit.list "$work/nvidia.list"
  sed "s#deb https://#deb [signed-by=$keyring] https://#g" "$work/nvidia.list" \
    >/etc/apt/sources.list.d/nvidia-container-toolkit.list
  apt_update
  apt_install nvidia-container-toolkit libnvidia-container-tools
  if ! nvidia-container-cli --version >/dev/null; then
    echo "[trainstack] nvidia-container-cli still does not run: enroot cannot start GPU containers" >&2
    return 1
  fi
}

# dlami-nvme.service mounts the instance store at /opt/dlami/nvme on the types that have one; it can still be
# running when the lifecycle reaches this step.
wait_for_instance_store() {
  [[ $(systemctl show --property=LoadState --value dlami-nvme.service) == loaded ]] || return 0
  local state status
  for _ in $(seq 1 24); do
    state=$(systemctl show --property=ActiveState --value dlami-nvme.service)
    status=$(systemctl show --property=ExecMainStatus --value dlami-nvme.service)
    if [[ $state == active && $status == 0 ]]; then return 0; fi
    if [[ $state == failed ]]; then break; fi
    sleep 5
  done
  echo "[trainstack] WARNING: dlami-nvme.service is $state (status $status): containers go to /opt/sagemaker (EBS)"
}

if [[ ! -d $slurm/include ]]; then
  echo "[trainstack] $slurm/include missing: cannot build pyxis against this Slurm" >&2
  exit 1
fi
apt_update
apt_install squashfs-tools parallel fuse-overlayfs squashfuse
if [[ $nvidia == 1 ]]; then
  nvidia_container_cli
fi

arch=$(dpkg --print-architecture)
release=https://github.com/NVIDIA/enroot/releases/download/v${enroot_version}
for package in enroot enroot+caps; do
  download "$release/${package}_${enroot_version}-1_${arch}.deb" "$work/${package}_${enroot_version}-1_${arch}.deb"
done
apt_install "$work/enroot_${enroot_version}-1_${arch}.deb" "$work/enroot+caps_${enroot_version}-1_${arch}.deb"

download "https://github.com/NVIDIA/pyxis/archive/refs/tags/v${pyxis_version}.tar.gz" "$work/pyxis.tar.gz"
tar -xzf "$work/pyxis.tar.gz" -C "$work"
CPPFLAGS="-I $slurm/include" make -C "$work/pyxis-${pyxis_version}" -j "$(nproc)"
CPPFLAGS="-I $slurm/include" make -C "$work/pyxis-${pyxis_version}" install
mkdir -p "$slurm/etc/plugstack.conf.d"
ln -sfn /usr/local/share/pyxis/pyxis.conf "$slurm/etc/plugstack.conf.d/pyxis.conf"
include="include $slurm/etc/plugstack.conf.d/pyxis.conf"
touch "$slurm/etc/plugstack.conf"
grep -qxF "$include" "$slurm/etc/plugstack.conf" || echo "$include" >>"$slurm/etc/plugstack.conf"
if [[ -f $slurm/etc/cgroup.conf ]] && ! grep -qi '^[[:space:]]*ConstrainDevices' "$slurm/etc/cgroup.conf"; then
  echo "ConstrainDevices=yes" >>"$slurm/etc/cgroup.conf"
fi

wait_for_instance_store
if mountpoint -q /opt/dlami/nvme; then local_disk=/opt/dlami/nvme; else local_disk=/opt/sagemaker; fi
cache=$local_disk/enroot/cache
if [[ $fsx == 1 ]]; then cache=/fsx/enroot; fi
for dir in "$local_disk/enroot" "$local_disk/enroot/data" "$local_disk/enroot/tmp" "$local_disk/enroot/cache"; do
  mkdir -p "$dir"
  chmod 1777 "$dir"
done
mkdir -p /etc/enroot
# enroot configuration keys: NVIDIA/enroot doc/configuration.md. enroot makes each user-$(id -u) directory 0700.
cat >/etc/enroot/enroot.conf <<CONF
# Written by trainstack's install_containers.sh
ENROOT_RUNTIME_PATH        $local_disk/enroot/user-\$(id -u)
ENROOT_DATA_PATH           $local_disk/enroot/data/user-\$(id -u)
ENROOT_TEMP_PATH           $local_disk/enroot/tmp
ENROOT_CACHE_PATH          $cache/user-\$(id -u)
ENROOT_ROOTFS_WRITABLE     yes
CONF
echo "[trainstack] enroot $enroot_version and pyxis $pyxis_version installed; containers on $local_disk, caches in $cache"
