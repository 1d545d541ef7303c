#!/bin/bash
# setup_fsx.sh <users file> <homes on lustre: 1|0> <containers: 1|0> <this node's address>
# Everything the lifecycle keeps on /fsx. on_create.sh runs it as root squash's identity (the squash UID:GID, or
# 65534:65534 where the file system squashes nothing) with no privilege over files: it creates only what that
# identity may create under a world-writable sticky root, and acts as each user in their own home:
# - /fsx/.trainstack (0755): the cluster's SSH host keys (ssh_known_hosts: each node adds its own, by host name and
#   address, so ssh between nodes never asks; trust_cluster_hosts.sh points ssh at it) and the accounting
#   database's backups, writable by the nodes' root only; a directory there that root did not create is refused,
#   so a user who got there first cannot plant host keys or a database dump.
# - /fsx/enroot (1777, with containers): enroot's per-user image caches (install_containers.sh). Each user's cache
#   is theirs alone (enroot creates it 0700): enroot trusts a cached layer by its file name (NVIDIA/enroot v3.4.1,
#   src/docker.sh:103), so a cache shared between users would let one plant layers in another's containers.
# - with homes on Lustre, /fsx/<user> for ubuntu and every configured user, created by the user (mode 0700, with
#   /etc/skel, ubuntu's with its node-local home), holding one ed25519 key pair for the cluster authorized for
#   itself (users ssh between the nodes of their jobs; the reference's utils/gen-keypair-ubuntu.sh) and the
#   user's configured public keys. Nodes run this at the same time: the key pair is made under flock (the file
#   system is mounted with the flock option). A home that exists but belongs to someone else is refused.
# The users file holds `user NAME UID` and `key NAME KEY` lines (node_config.py fsx-users).
set -euo pipefail

users_file=$1 homes_on_lustre=$2 containers=$3 address=$4
fsx=/fsx
me=$(id -u)

# as_user NAME CMD...: run a command as the user, with the user's groups, from a directory anyone can read.
as_user() {
  local name=$1
  shift
  (cd / && setpriv --reuid="$name" --regid="$name" --init-groups -- "$@")
}

# owned_dir PATH MODE: make PATH with MODE as this identity, or check that an existing one is ours with MODE.
owned_dir() {
  local path=$1 mode=$2
  if [[ ! -e $path ]]; then
    mkdir -m "$mode" "$path"
  fi
  local owner actual
  owner=$(stat --format=%u "$path")
  actual=$(stat --format=%a "$path")
  if [[ ! -d $path || -L $path || $owner != "$me" || $actual != "${mode#0}" ]]; then
    echo "[trainstack] $path belongs to uid $owner with mode $actual, not to the nodes' root (uid $me on /fsx) with" \
      "mode ${mode#0}: someone else created it; remove it from a client exempt from root squash" >&2
    exit 1
  fi
}

# user_home NAME UID [SOURCE]: the user's home on /fsx, made by the user, seeded from SOURCE (default /etc/skel).
user_home() {
  local name=$1 uid=$2 source=${3:-/etc/skel} home=$fsx/$1
  if [[ -e $home ]]; then
    if [[ $(stat --format=%u "$home") != "$uid" || -L $home ]]; then
      echo "[trainstack] $home exists but belongs to uid $(stat --format=%u "$home"), not $name ($uid):" \
        "remove it from a client exempt from root squash" >&2
      exit 1
    fi
    return 0
  fi
  as_user "$name" mkdir -m 0700 "$home"
  as_user "$name" cp -R --preserve=mode,timestamps "$source/." "$home/"
  as_user "$name" chmod 0700 "$home" # copying "." gave it the source directory's mode
  echo "[trainstack] created $home as $name"
}

# user_keys NAME KEY...: the cluster key pair and the configured public keys in the user's authorized_keys.
user_keys() {
  local name=$1
  shift
  local ssh=$fsx/$name/.ssh
  as_user "$name" mkdir -p -m 0700 "$ssh"
  # shellcheck disable=SC2016 # expanded by the user's shell
  as_user "$name" flock "$ssh/.trainstack.lock" bash -c '
    set -euo pipefail
    ssh=$1 name=$2
    shift 2
    [[ -f $ssh/id_ed25519 ]] || ssh-keygen -q -t ed25519 -N "" -C "$name@trainstack" -f "$ssh/id_ed25519"
    touch "$ssh/authorized_keys"
    chmod 600 "$ssh/authorized_keys"
    for key in "$(cat "$ssh/id_ed25519.pub")" "$@"; do
      grep -qxF "$key" "$ssh/authorized_keys" || echo "$key" >>"$ssh/authorized_keys"
    done' _ "$ssh" "$name" "$@"
}

mode=$(stat --format=%a "$fsx")
if [[ $mode != 1777 ]]; then
  echo "[trainstack] $fsx has mode $mode, not 1777: mount_fsx.sh should have refused it" >&2
  exit 1
fi
owned_dir "$fsx/.trainstack" 0755
known=$fsx/.trainstack/ssh_known_hosts
(
  flock --exclusive 9
  touch "$known"
  chmod 644 "$known"
  for pub in /etc/ssh/ssh_host_*_key.pub; do
    [[ -f $pub ]] || continue
    read -r type key _ <"$pub"
    line="$(hostname),$address $type $key"
    grep -qxF "$line" "$known" || echo "$line" >>"$known"
  done
) 9>"$fsx/.trainstack/ssh_known_hosts.lock"
if [[ $containers == 1 ]]; then
  owned_dir "$fsx/enroot" 1777
fi
if [[ $homes_on_lustre == 1 ]]; then
  ubuntu_uid=$(id -u ubuntu)
  user_home ubuntu "$ubuntu_uid" /home/ubuntu
  user_keys ubuntu
  declare -A keys=()
  names=()
  while read -r kind name rest; do
    case $kind in
      user)
        names+=("$name")
        user_home "$name" "$rest"
        ;;
      key) keys[$name]+="$rest"$'\n' ;;
      *) ;;
    esac
  done <"$users_file"
  for name in "${names[@]}"; do
    mapfile -t configured < <(printf %s "${keys[$name]:-}")
    user_keys "$name" "${configured[@]}"
  done
fi
echo "[trainstack] /fsx ready for $address as uid $me (homes on Lustre: $homes_on_lustre)"
