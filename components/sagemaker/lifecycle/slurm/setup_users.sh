#!/bin/bash
# setup_users.sh <provisioning_parameters.json> <homes on lustre: 1|0>
# The configured users on this node: the same name, UID and GID (a group of the user's name, GID = UID) on every
# node, since Slurm runs a job step as the submitting UID everywhere and /fsx stores numeric ids. With homes on
# Lustre every home (ubuntu's too) is /fsx/<user>, as in AWS's HyperPod reference (base-config/add_users.sh,
# utils/fsx_ubuntu.sh); setup_fsx.sh makes those homes, as their users. With node-local homes this script makes
# /home/<user> and installs the user's configured public keys.
set -euo pipefail

params=$1 homes_on_lustre=$2

home_for() {
  if [[ $homes_on_lustre == 1 ]]; then echo "/fsx/$1"; else echo "/home/$1"; fi
}

ensure_group() {
  local name=$1 gid=$2 existing
  if existing=$(getent group "$name"); then
    if [[ $(cut -d: -f3 <<<"$existing") != "$gid" ]]; then
      echo "[trainstack] group $name exists with gid $(cut -d: -f3 <<<"$existing"), configured $gid" >&2
      exit 1
    fi
  elif existing=$(getent group "$gid"); then
    echo "[trainstack] gid $gid of user $name already belongs to group ${existing%%:*}" >&2
    exit 1
  else
    groupadd --gid "$gid" "$name"
  fi
}

ensure_user() {
  local name=$1 uid=$2 home existing
  home=$(home_for "$name")
  ensure_group "$name" "$uid"
  if existing=$(getent passwd "$name"); then
    if [[ $(cut -d: -f3 <<<"$existing") != "$uid" ]]; then
      echo "[trainstack] user $name exists with uid $(cut -d: -f3 <<<"$existing"), configured $uid: fix the AMI or the stack" >&2
      exit 1
    fi
    [[ $(cut -d: -f6 <<<"$existing") == "$home" ]] || usermod --home "$home" "$name"
  elif existing=$(getent passwd "$uid"); then
    echo "[trainstack] uid $uid of user $name already belongs to ${existing%%:*}" >&2
    exit 1
  else
    # No home made here: on Lustre the user makes it (setup_fsx.sh); a node-local one is made below.
    useradd --uid "$uid" --gid "$uid" --no-create-home --home-dir "$home" --shell /bin/bash "$name"
  fi
}

local_home() {
  local name=$1 home=/home/$1 keys
  if [[ ! -d $home ]]; then
    mkdir -p "$home"
    cp -R /etc/skel/. "$home/"
    chown -R "$name:$name" "$home"
    chmod 0750 "$home"
  fi
  keys=$(python3 node_config.py keys "$params" "$name")
  [[ -n $keys ]] || return 0
  install -d -m 0700 -o "$name" -g "$name" "$home/.ssh"
  touch "$home/.ssh/authorized_keys"
  local key
  while IFS= read -r key; do
    grep -qxF "$key" "$home/.ssh/authorized_keys" || echo "$key" >>"$home/.ssh/authorized_keys"
  done <<<"$keys"
  chown "$name:$name" "$home/.ssh/authorized_keys"
  chmod 600 "$home/.ssh/authorized_keys"
}

listed=$(python3 node_config.py users "$params")
if [[ $homes_on_lustre == 1 ]]; then
  [[ $(getent passwd ubuntu | cut -d: -f6) == /fsx/ubuntu ]] || usermod --home /fsx/ubuntu ubuntu
fi
while read -r name uid; do
  [[ -n $name ]] || continue
  ensure_user "$name" "$uid"
  if [[ $homes_on_lustre != 1 ]]; then
    local_home "$name"
  fi
done <<<"$listed"
echo "[trainstack] users ready (homes on Lustre: $homes_on_lustre)"
