#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A private single-host Slurm cluster for ditask's tests, started directly (no systemd):
#
#   scripts/slurm/slurm_local.sh start DIR    bring it up in DIR (idempotent); prints DIR/env
#   scripts/slurm/slurm_local.sh stop DIR     stop it (idempotent) and remove nothing but the daemons
#   scripts/slurm/slurm_local.sh status DIR   exit 0 when it is up
#
# Private means: its own slurm.conf (use it with `source DIR/env`, which sets SLURM_CONF), state,
# spool and logs in DIR, non-default free ports for slurmctld and slurmd, its own munge daemon with
# its own key and socket (AuthInfo=socket=...), nothing written under /etc. It refuses to start
# when a slurmctld or munged of someone else already runs on the machine. The controller runs as
# this host's short name at 127.0.0.1 (slurmctld insists on its own name); one node, "dtnode1", at
# 127.0.0.1, declared with 4 CPUs (SlurmdParameters=config_overrides) so `srun -n 4` runs on 2
# cores. Needs root and Debian's slurm-wlm and munge. Wrap every srun in `timeout`: a request the
# node cannot satisfy pends forever.
set -euo pipefail

cmd="${1:-}"
dir="${2:-}"
[[ -n "$cmd" && -n "$dir" ]] || { echo "usage: $0 start|stop|status DIR" >&2; exit 2; }
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
node=dtnode1

pid_of() { [[ -f "$dir/$1.pid" ]] && cat "$dir/$1.pid" 2>/dev/null || true; }
alive() {
  local pid
  pid="$(pid_of "$1")"
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null
}
up() { alive munged && alive slurmctld && alive slurmd; }

# A free TCP port on loopback in 20000-29999 (not the ephemeral range).
free_port() {
  local p
  for _ in $(seq 200); do
    p=$((20000 + RANDOM % 10000))
    if ! ss -Htln "sport = :$p" | grep -q .; then
      echo "$p"
      return
    fi
  done
  echo "slurm_local: no free port found" >&2
  exit 1
}

stop_daemon() {  # stop_daemon NAME SIGNAL
  local pid
  pid="$(pid_of "$1")"
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
    kill -"$2" "$pid" 2>/dev/null || true
    for _ in $(seq 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.05
    done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$dir/$1.pid"
}

case "$cmd" in
  status)
    up
    ;;
  stop)
    stop_daemon slurmd TERM
    stop_daemon slurmctld TERM
    stop_daemon munged TERM
    ;;
  start)
    if up; then
      cat "$dir/env"
      exit 0
    fi
    [[ $EUID -eq 0 ]] || { echo "slurm_local: needs root (slurmd runs jobs as their users)" >&2; exit 1; }
    for bin in munged slurmctld slurmd srun sinfo; do
      command -v "$bin" >/dev/null || { echo "slurm_local: $bin is not installed (apt-get install slurm-wlm munge)" >&2; exit 1; }
    done
    # Someone else's daemons: never share them, never disturb them.
    for daemon in slurmctld slurmd munged; do
      mine="$(pid_of "$daemon")"
      others="$(pgrep -x "$daemon" | grep -vx "${mine:-none}" || true)"
      if [[ -n "$others" ]]; then
        echo "slurm_local: a $daemon runs already (pid $others); refusing to start a second cluster" >&2
        exit 1
      fi
    done
    "$0" stop "$dir"
    mkdir -p "$dir/state" "$dir/spool" "$dir/log" "$dir/munge"
    chown munge:munge "$dir/munge"
    chmod 0755 "$dir/munge"  # munged: the socket's folder must be searchable by all
    if [[ ! -f "$dir/munge/munge.key" ]]; then
      head -c 1024 /dev/urandom >"$dir/munge/munge.key"
    fi
    chown munge:munge "$dir/munge/munge.key"
    chmod 0400 "$dir/munge/munge.key"
    runuser -u munge -- munged --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
      --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed"
    for _ in $(seq 100); do
      [[ -S "$dir/munge/munge.socket" && -f "$dir/munge/munged.pid" ]] && break
      sleep 0.05
    done
    cp "$dir/munge/munged.pid" "$dir/munged.pid"
    ctld_port="$(free_port)"
    slurmd_port="$(free_port)"
    cat >"$dir/slurm.conf" <<CONF
ClusterName=ditask
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
NodeName=$node NodeAddr=127.0.0.1 NodeHostname=$(hostname -s) CPUs=4 State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
    export SLURM_CONF="$dir/slurm.conf"
    slurmctld -i -f "$SLURM_CONF"
    slurmd -f "$SLURM_CONF" -N "$node"
    idle() { timeout 5 sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; }
    for _ in $(seq 100); do
      idle && break
      sleep 0.1
    done
    idle || {
      echo "slurm_local: the node did not become idle; logs in $dir/log" >&2
      exit 1
    }
    echo "export SLURM_CONF=$dir/slurm.conf" >"$dir/env"
    cat "$dir/env"
    ;;
  *)
    echo "usage: $0 start|stop|status DIR" >&2
    exit 2
    ;;
esac
