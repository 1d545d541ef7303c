#!/bin/bash
# setup_accounting.sh configure            before slurmctld starts: MariaDB, slurmdbd, accounting.conf
# setup_accounting.sh users <params.json>  after: the cluster, and ubuntu plus the configured users, in sacctmgr
# Slurm accounting (sacct, sreport) on the controller, as AWS's HyperPod reference does it
# (base-config/setup_mariadb_accounting.sh and setup_user_associations.sh): the HyperPod Slurm AMI ships
# MariaDB, slurmdbd and /opt/slurm/etc/slurmdbd.conf.template; slurm.conf includes accounting.conf, which
# is empty until this script fills it. The database password is generated here, goes only into slurmdbd.conf
# (mode 600, owner slurm) and MariaDB, and is never printed.
set -euo pipefail

ROOT=${TRAINSTACK_ROOT:-}
etc=$ROOT/opt/slurm/etc
SLURMDBD_PORT=6819 # slurmdbd.conf(5) DbdPort default

configure() {
  if [[ ! -f $etc/slurmdbd.conf.template ]]; then
    echo "[trainstack] $etc/slurmdbd.conf.template missing: this AMI has no slurmdbd to configure" >&2
    exit 1
  fi
  if ! grep -Eq '^[[:space:]]*include[[:space:]]+.*accounting\.conf' "$etc/slurm.conf"; then
    echo "[trainstack] $etc/slurm.conf does not include accounting.conf: accounting settings would be ignored" >&2
    exit 1
  fi
  # slurm.conf: SlurmctldHost=<name>(<address>); slurmdbd runs next to slurmctld.
  local dbd_host
  dbd_host=$(awk -F'[=(]' '/^SlurmctldHost=/ {print $NF; exit}' "$etc/slurm.conf" | tr -d ')')
  if [[ -z $dbd_host ]]; then
    echo "[trainstack] no SlurmctldHost in $etc/slurm.conf" >&2
    exit 1
  fi

  systemctl enable --now mariadb
  local password
  password=$(python3 -c 'import secrets; print(secrets.token_hex(24))') # hex: nothing to quote in SQL
  # Ubuntu's MariaDB lets the OS root in over the unix socket without a password.
  mysql --user=root <<SQL
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '${password}';
ALTER USER 'slurm'@'localhost' IDENTIFIED BY '${password}';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
SQL
  (
    umask 077
    # ${SLURM_DB_USER} and ${SLURM_DB_PASSWORD} in the AMI's template (the reference fills them with envsubst).
    SLURM_DB_USER=slurm SLURM_DB_PASSWORD=$password python3 -c \
      'import os, string, sys; sys.stdout.write(string.Template(sys.stdin.read()).safe_substitute(os.environ))' \
      <"$etc/slurmdbd.conf.template" >"$etc/slurmdbd.conf"
  )
  chown slurm:slurm "$etc/slurmdbd.conf"
  chmod 600 "$etc/slurmdbd.conf"

  cat >"$etc/accounting.conf" <<CONF
# Written by trainstack's setup_accounting.sh: jobs are recorded by slurmdbd on the controller.
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=${dbd_host}
AccountingStoragePort=${SLURMDBD_PORT}
CONF
  systemctl enable --now slurmdbd
  echo "[trainstack] accounting: slurmdbd on ${dbd_host}:${SLURMDBD_PORT}"
}

users() {
  local params=$1 cluster
  cluster=$(awk -F= '/^ClusterName=/ {print $2; exit}' "$etc/slurm.conf")
  if [[ -z $cluster ]]; then
    echo "[trainstack] no ClusterName in $etc/slurm.conf" >&2
    exit 1
  fi
  local ready=false
  for _ in $(seq 1 30); do
    if sacctmgr --noheader show cluster >/dev/null 2>&1; then
      ready=true
      break
    fi
    sleep 5
  done
  if [[ $ready != true ]]; then
    echo "[trainstack] slurmdbd did not answer sacctmgr within 150 s" >&2
    exit 1
  fi
  # sacctmgr add fails on what exists: add only what is missing, so a rerun is clean.
  if [[ -z $(sacctmgr --noheader --parsable2 show cluster "$cluster" format=cluster) ]]; then
    sacctmgr --immediate add cluster "$cluster"
  fi
  local listed name _uid
  listed=$(python3 node_config.py users "$params")
  while read -r name _uid; do
    [[ -n $name ]] || continue
    if [[ -z $(sacctmgr --noheader --parsable2 show user "$name" format=user) ]]; then
      sacctmgr --immediate add user "$name" account=root
    fi
  done <<<"ubuntu 1000"$'\n'"$listed"
  echo "[trainstack] accounting: cluster $cluster and its users are registered"
}

case ${1:-} in
  configure) configure ;;
  users) users "${2:?usage: setup_accounting.sh users <provisioning_parameters.json>}" ;;
  *)
    echo "usage: setup_accounting.sh configure | users <provisioning_parameters.json>" >&2
    exit 2
    ;;
esac
