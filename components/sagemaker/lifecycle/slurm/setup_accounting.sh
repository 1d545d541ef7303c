#!/bin/bash
# setup_accounting.sh configure            before slurmctld starts: MariaDB (restored from /fsx after a node
#                                          replacement), slurmdbd, accounting.conf
# setup_accounting.sh users <params.json>  after: the cluster, and ubuntu plus the configured users, in sacctmgr
# setup_accounting.sh backup-timer         install this script and an hourly backup of the database to /fsx
# setup_accounting.sh backup               one backup (what the timer runs)
# Slurm accounting (sacct, sreport) on the controller, as AWS's HyperPod reference does it
# (base-config/setup_mariadb_accounting.sh and setup_user_associations.sh): the HyperPod Slurm AMI ships
# MariaDB, slurmdbd and /opt/slurm/etc/slurmdbd.conf.template; slurm.conf includes accounting.conf, which
# is empty until this script fills it. The database password is generated here, goes only into slurmdbd.conf
# (mode 600, owner slurm) and MariaDB, and is never printed.
# The database lives on the controller's root volume, which HyperPod replaces with the node (and with
# `update-cluster-software`): the hourly dump on /fsx/.trainstack/slurm-accounting/ brings the jobs and
# associations back when a new controller configures accounting.
set -euo pipefail

etc=/opt/slurm/etc
backups=/fsx/.trainstack/slurm-accounting
SLURMDBD_PORT=6819 # slurmdbd.conf(5) DbdPort default
INSTALLED=/opt/trainstack/bin/setup_accounting.sh
UNIT=trainstack-accounting-backup

# slurm.conf's key=value lines, keys case-insensitive as Slurm reads them (slurm.conf(5)).
conf_value() {
  awk -F= -v key="$(tr '[:upper:]' '[:lower:]' <<<"$1")" 'tolower($1) == key {sub(/^[^=]*=/, ""); print; exit}' "$2"
}

cluster_name() {
  local cluster
  cluster=$(conf_value ClusterName "$etc/slurm.conf")
  if [[ -z $cluster ]]; then
    echo "[trainstack] no ClusterName in $etc/slurm.conf" >&2
    exit 1
  fi
  echo "$cluster"
}

# restore: a fresh root volume has no slurm_acct_db; load the last dump of this cluster if /fsx has one. The dump
# is SQL run as MariaDB's root: only a file the nodes' root wrote (setup_fsx.sh's /fsx/.trainstack) is loaded.
restore() {
  local dump=$backups/$1.sql.gz
  if [[ -n $(mysql --batch --skip-column-names --execute "SHOW DATABASES LIKE 'slurm_acct_db'") ]]; then
    echo "[trainstack] accounting: slurm_acct_db exists, nothing to restore"
    return 0
  fi
  [[ -f $dump ]] || return 0
  local owner mode trusted
  owner=$(stat --format=%u "$dump")
  mode=$(stat --format=%a "$dump")
  trusted=$(stat --format=%u /fsx/.trainstack)
  if [[ $owner != "$trusted" || $mode != 600 || -L $dump ]]; then
    echo "[trainstack] $dump belongs to uid $owner with mode $mode, not to the nodes' root (uid $trusted) with" \
      "mode 600: not restoring it" >&2
    exit 1
  fi
  gunzip --stdout "$dump" | mysql
  echo "[trainstack] accounting: restored slurm_acct_db from $dump ($(stat --format=%y "$dump"))"
}

configure() {
  if [[ ! -f $etc/slurmdbd.conf.template ]]; then
    echo "[trainstack] $etc/slurmdbd.conf.template missing: this AMI has no slurmdbd to configure" >&2
    exit 1
  fi
  # HyperPod's own slurm.conf says `Include accounting.conf` (AWS's HyperPod workshop, Troubleshooting); Slurm
  # reads keywords case-insensitively and resolves a relative include against slurm.conf's directory.
  if ! grep -Eiq "^[[:space:]]*include[[:space:]]+($etc/|\./)?accounting\.conf[[:space:]]*(#.*)?$" "$etc/slurm.conf"; then
    echo "[trainstack] $etc/slurm.conf does not include accounting.conf: accounting settings would be ignored" >&2
    exit 1
  fi
  # slurm.conf: SlurmctldHost=<name>(<address>); slurmdbd runs next to slurmctld.
  local host dbd_host dbd_port cluster
  host=$(conf_value SlurmctldHost "$etc/slurm.conf")
  dbd_host=${host#*(}
  dbd_host=${dbd_host%)}
  if [[ -z $dbd_host ]]; then
    echo "[trainstack] no SlurmctldHost in $etc/slurm.conf" >&2
    exit 1
  fi
  dbd_port=$(conf_value DbdPort "$etc/slurmdbd.conf.template")
  cluster=$(cluster_name)

  systemctl enable --now mariadb
  restore "$cluster"
  local password
  password=$(python3 -c 'import secrets; print(secrets.token_hex(24))') # hex: nothing to quote in SQL
  # Ubuntu's MariaDB lets the OS root in over the unix socket without a password.
  mysql <<SQL
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

  # GPUs as a trackable resource (the reference's setup_mariadb_accounting.sh): sacct and sreport count GPU hours.
  # gres/gpu needs the gpu GRES type; HyperPod's slurm.conf may declare GresTypes itself (a second declaration is
  # an error in slurmctld's log), so it is added only when slurm.conf has none.
  local gres_types=""
  [[ -n $(conf_value GresTypes "$etc/slurm.conf") ]] || gres_types="GresTypes=gpu"
  cat >"$etc/accounting.conf" <<CONF
# Written by trainstack's setup_accounting.sh: jobs are recorded by slurmdbd on the controller.
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=${dbd_host}
AccountingStoragePort=${dbd_port:-$SLURMDBD_PORT}
AccountingStorageTRES=gres/gpu
${gres_types}
CONF
  # restart: a slurmdbd that HyperPod or an earlier run started must read the new password.
  systemctl enable slurmdbd
  systemctl restart slurmdbd
  echo "[trainstack] accounting: slurmdbd on ${dbd_host}:${dbd_port:-$SLURMDBD_PORT}"
}

users() {
  local params=$1 cluster
  cluster=$(cluster_name)
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

# backup: the whole database, consistent (--single-transaction: InnoDB), gzipped, replaced atomically. The file is
# written as the owner of /fsx/.trainstack (root squash's identity, setup_fsx.sh), which is what a squashed root
# writes as anyway: restore() loads only such a file.
backup() {
  local cluster owner
  cluster=$(cluster_name)
  if ! mountpoint -q /fsx || [[ ! -d /fsx/.trainstack ]]; then
    echo "[trainstack] /fsx/.trainstack is missing: no accounting backup" >&2
    exit 1
  fi
  owner=$(stat --format=%u:%g /fsx/.trainstack)
  # shellcheck disable=SC2016 # expanded by the inner shell
  mysqldump --single-transaction --databases slurm_acct_db | gzip |
    setpriv --reuid="${owner%:*}" --regid="${owner#*:}" --clear-groups bash -c '
      set -euo pipefail
      mkdir -p -m 0700 "$1"
      dump=$(mktemp "$1/.$2.XXXXXX")
      cat >"$dump"
      chmod 600 "$dump"
      mv "$dump" "$1/$2.sql.gz"' _ "$backups" "$cluster"
  echo "[trainstack] accounting: backed up slurm_acct_db to $backups/$cluster.sql.gz"
}

backup_timer() {
  install -D -m 0755 "$0" "$INSTALLED"
  cat >/etc/systemd/system/$UNIT.service <<UNIT
[Unit]
Description=Back up the Slurm accounting database to /fsx (trainstack)
After=mariadb.service
RequiresMountsFor=/fsx

[Service]
Type=oneshot
ExecStart=/bin/bash $INSTALLED backup
UNIT
  cat >/etc/systemd/system/$UNIT.timer <<UNIT
[Unit]
Description=Hourly backup of the Slurm accounting database to /fsx (trainstack)

[Timer]
OnCalendar=hourly
Persistent=true

[Install]
WantedBy=timers.target
UNIT
  systemctl daemon-reload
  systemctl enable --now $UNIT.timer
  systemctl start $UNIT.service # the first backup now, with the cluster and its users
}

case ${1:-} in
  configure) configure ;;
  users) users "${2:?usage: setup_accounting.sh users <provisioning_parameters.json>}" ;;
  backup) backup ;;
  backup-timer) backup_timer ;;
  *)
    echo "usage: setup_accounting.sh configure | users <provisioning_parameters.json> | backup | backup-timer" >&2
    exit 2
    ;;
esac
