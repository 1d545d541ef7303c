#!/bin/bash
# hold_lustre_client.sh: keep apt from upgrading the Lustre client module package. An upgrade of it can pull
# in a newer kernel; a node that reboots into a kernel its Lustre modules were not built for loses /fsx.
# The package name and the hold are AWS's HyperPod reference (aws-samples/awsome-distributed-training,
# 1.architectures/5.sagemaker-hyperpod/LifecycleScripts/base-config/hotfix/hold-lustre-client.sh).
set -euo pipefail

package=lustre-client-modules-aws
status=$(dpkg-query --show --showformat='${Status}' "$package" 2>/dev/null || true)
if [[ $status != "install ok installed" ]]; then
  echo "[trainstack] $package is not installed (status: '${status:-none}'): this AMI has no FSx Lustre client" >&2
  exit 1
fi
# apt-mark waits for no lock: retry while another apt (unattended-upgrades at boot) holds it, as the reference does.
for attempt in $(seq 1 20); do
  if apt-mark hold "$package"; then
    break
  fi
  echo "[trainstack] apt-mark hold $package failed (attempt $attempt), retrying in 6 s"
  sleep 6
done
if ! apt-mark showhold | grep -qx "$package"; then
  echo "[trainstack] could not hold $package" >&2
  exit 1
fi
echo "[trainstack] held $package at $(dpkg-query --show --showformat='${Version}' "$package")"
