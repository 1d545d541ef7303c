#!/bin/bash
# setup_users.sh <provisioning_parameters.json> <homes on lustre: 1|0>
# The configured users, with the same name and UID on every node (Slurm runs a job step as the submitting
# UID on every node), and, with homes on Lustre, every home (ubuntu's too) at /fsx/<user>, as AWS's HyperPod
# reference does (base-config/add_users.sh, utils/fsx_ubuntu.sh). On a shared home each user gets one SSH key
# pair for the cluster (authorized for itself, so users ssh between the nodes of their jobs; the reference's
# utils/gen-keypair-ubuntu.sh) plus the public keys configured for them. Nodes run this at the same time:
# the key pair is made under flock on the shared file system (mounted with the flock option).
set -euo pipefail

params=$1 homes_on_lustre=$2
ROOT=${TRAINSTACK_ROOT:-}

home_for() {
  if [[ $homes_on_lustre == 1 ]]; then echo "/fsx/$1"; else echo "/home/$1"; fi
}

ensure_user() {
  local name=$1 uid=$2 home
  home=$(home_for "$name")
  if id -u "$name" >/dev/null 2>&1; then
    local existing
    existing=$(id -u "$name")
    if [[ $existing != "$uid" ]]; then
      echo "[trainstack] user $name exists with uid $existing, configured $uid: fix the AMI or the stack" >&2
      exit 1
    fi
  elif getent passwd "$uid" >/dev/null; then
    echo "[trainstack] uid $uid of user $name already belongs to $(getent passwd "$uid" | cut -d: -f1)" >&2
    exit 1
  else
    # -M: the home may already exist on the shared file system (another node made it); it is made below.
    useradd --uid "$uid" --user-group --no-create-home --home-dir "$home" --shell /bin/bash "$name"
  fi
  make_home "$name" "$home"
}

make_home() {
  local name=$1 home=$2
  if [[ ! -d $ROOT$home ]]; then
    mkdir -p "$ROOT$home"
    cp -a "$ROOT/etc/skel/." "$ROOT$home/" 2>/dev/null || true # an empty skeleton is fine
    chown -R "$name:$name" "$ROOT$home"
  fi
}

move_ubuntu_home() {
  local home=/fsx/ubuntu
  if [[ ! -d $ROOT$home ]]; then
    mkdir -p "$ROOT$home"
    cp -a "$ROOT/home/ubuntu/." "$ROOT$home/"
    chown -R ubuntu:ubuntu "$ROOT$home"
  fi
  usermod --home "$home" ubuntu
}

ssh_keys() {
  local name=$1 home=$2 extra=$3 ssh
  ssh=$ROOT$home/.ssh
  mkdir -p "$ssh"
  chmod 700 "$ssh"
  (
    flock --exclusive 9
    if [[ ! -f $ssh/id_ed25519 ]]; then
      ssh-keygen -q -t ed25519 -N "" -C "$name@trainstack" -f "$ssh/id_ed25519"
    fi
    touch "$ssh/authorized_keys"
    local key
    while IFS= read -r key; do
      [[ -n $key ]] || continue
      grep -qxF "$key" "$ssh/authorized_keys" || echo "$key" >>"$ssh/authorized_keys"
    done <<<"$(cat "$ssh/id_ed25519.pub")"$'\n'"$extra"
  ) 9>"$ssh/.trainstack.lock"
  chmod 600 "$ssh/authorized_keys" "$ssh/id_ed25519"
  chown -R "$name:$name" "$ssh"
}

listed=$(python3 node_config.py users "$params")
if [[ $homes_on_lustre == 1 ]]; then
  if ! mountpoint -q "$ROOT/fsx"; then
    echo "[trainstack] homes on Lustre, but /fsx is not mounted" >&2
    exit 1
  fi
  move_ubuntu_home
  ssh_keys ubuntu /fsx/ubuntu ""
fi
while read -r name uid; do
  [[ -n $name ]] || continue
  ensure_user "$name" "$uid"
  keys=$(python3 node_config.py keys "$params" "$name")
  # On node-local homes a key pair is trusted on its own node only; the configured keys still log in.
  if [[ $homes_on_lustre == 1 || -n $keys ]]; then
    ssh_keys "$name" "$(home_for "$name")" "$keys"
  fi
done <<<"$listed"
echo "[trainstack] users ready (homes on Lustre: $homes_on_lustre)"
