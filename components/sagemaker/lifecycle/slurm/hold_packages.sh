#!/bin/bash
# hold_packages.sh: keep apt from upgrading the Lustre client modules or the kernel. The Lustre client is a kernel
# module built for one kernel; a node that reboots (HyperPod's recovery reboots nodes) into a kernel its Lustre
# modules were not built for loses /fsx. AWS's HyperPod reference holds the module package only
# (aws-samples/awsome-distributed-training, 1.architectures/5.sagemaker-hyperpod/LifecycleScripts/base-config/
# hotfix/hold-lustre-client.sh); a hold on it does not stop `apt upgrade` or unattended-upgrades from installing a
# newer kernel through the kernel meta-packages, so every installed one is held too. Their names are Ubuntu's
# (source package linux-meta-aws: linux-aws, linux-image-aws, linux-headers-aws, linux-modules-extra-aws,
# linux-tools-aws, linux-cloud-tools-aws, and the -lts-<release>/-edge variants); the versioned packages of the
# running kernel (linux-image-6.8.0-1021-aws) never upgrade by themselves.
set -euo pipefail

lustre="lustre-client-modules-aws"
# ${db:Status-Status}: "installed" whether the package is held already ("hold ok installed", a rerun) or not.
status=$(dpkg-query --show --showformat='${db:Status-Status}' "$lustre" 2>/dev/null || true)
if [[ $status != installed ]]; then
  echo "[trainstack] $lustre is not installed (status: '${status:-none}'): this AMI has no FSx Lustre client" >&2
  exit 1
fi
meta='^linux-(aws|(image|headers|modules-extra|tools|cloud-tools)-aws)(-lts-[0-9.]+|-edge)?$'
mapfile -t kernel < <(dpkg-query --show --showformat='${db:Status-Abbrev} ${Package}\n' 'linux-*' 2>/dev/null |
  awk -v meta="$meta" '$1 == "ii" && $2 ~ meta {print $2}')
packages=("$lustre" "${kernel[@]}")
# apt-mark waits for no lock: retry while another apt (unattended-upgrades at boot) holds it, as the reference does.
held=false
for attempt in $(seq 1 20); do
  if apt-mark hold "${packages[@]}"; then
    held=true
    break
  fi
  echo "[trainstack] apt-mark hold failed (attempt $attempt), retrying in 6 s"
  sleep 6
done
holds=$(apt-mark showhold)
for package in "${packages[@]}"; do
  if [[ $held != true ]] || ! grep -qxF "$package" <<<"$holds"; then
    echo "[trainstack] could not hold $package" >&2
    exit 1
  fi
done
echo "[trainstack] held ${packages[*]} (Lustre client $(dpkg-query --show --showformat='${Version}' "$lustre"))"
