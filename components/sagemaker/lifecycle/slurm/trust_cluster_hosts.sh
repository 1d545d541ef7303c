#!/bin/bash
# trust_cluster_hosts.sh: ssh on this node trusts the host keys the cluster's nodes publish on /fsx
# (/fsx/.trainstack/ssh_known_hosts, setup_fsx.sh), next to the system's own known hosts, so ssh between nodes
# (users between the nodes of their jobs, MPI launchers) neither asks nor turns host key checking off. Ubuntu's
# /etc/ssh/ssh_config includes /etc/ssh/ssh_config.d/*.conf first, so this setting wins (ssh_config(5): the first
# value obtained is used). A replaced node adds its new keys; ssh accepts a host when any listed key matches.
set -euo pipefail

known=/fsx/.trainstack/ssh_known_hosts
if [[ ! -s $known ]]; then
  echo "[trainstack] $known is missing or empty: setup_fsx.sh did not publish this node's host keys" >&2
  exit 1
fi
mkdir -p /etc/ssh/ssh_config.d
cat >/etc/ssh/ssh_config.d/trainstack.conf <<CONF
# Written by trainstack's trust_cluster_hosts.sh: the cluster's nodes publish their host keys on /fsx.
Host *
    GlobalKnownHostsFile /etc/ssh/ssh_known_hosts /etc/ssh/ssh_known_hosts2 $known
CONF
echo "[trainstack] ssh trusts the $(wc -l <"$known") host keys in $known"
