#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, for tests and for trying scripts/slurm_train.sbatch:
# munged, slurmctld and slurmd, all three from Debian's slurm-wlm and munge.
#
#   scripts/slurm_local.sh start     install what is missing (root + apt-get), configure, start; idempotent
#   scripts/slurm_local.sh status    what runs; prints the SLURM_CONF line the clients need
#   scripts/slurm_local.sh stop      stop the daemons this script started (its pid files), nothing else
#   scripts/slurm_local.sh env       print `export SLURM_CONF=...` (eval "$(scripts/slurm_local.sh env)")
#
# Everything lives in one state directory, GENSIM_SLURM_DIR (default /tmp/gensim-jax-slurm): slurm.conf,
# its own munge key and socket, pid files, logs and spool. The system's /etc/slurm and munge are not touched;
# clients (sbatch, srun, squeue, sacct, scontrol, scancel) find the cluster through SLURM_CONF.
#
# The node: this host (`hostname -s`), twice its cores as CPUs (2 x nproc, at least 4) and its memory
# (free -m, less 512 MB). The CPUs are declared twice over so that two 2-task jobs run at once: the test
# jobs spend most of their time waiting (a held stream, a signal 30-60 s away, KillWait), and on 2 cores a
# second pytest worker's job would otherwise queue behind the first (a smoke job waited 62 s). Partition `debug` (the default) with MaxTime=30 minutes. No cgroups (containers):
# ProctrackType=proctrack/linuxproc, TaskPlugin=task/none. Accounting: jobcomp/filetxt only (no slurmdbd),
# so `sacct` answers from the controller's job completion file (JobAcctGatherType=jobacct_gather/none).
#
# Exit status: 0 started (or already running) / stopped; 3 cannot install (not root, or no apt-get) --
# the reason is the one line on stderr that starts with "slurm_local: cannot start:"; 4 a daemon did not
# come up (its log tail is printed); 2 usage.
set -euo pipefail

DIR=${GENSIM_SLURM_DIR:-/tmp/gensim-jax-slurm}
CONF=$DIR/slurm.conf
HOST=$(hostname -s)
MAX_TIME=${GENSIM_SLURM_MAX_TIME:-30}

say() { echo "slurm_local: $*" >&2; }
cannot() { echo "slurm_local: cannot start: $*" >&2; exit 3; }

alive() { # alive PIDFILE: the pid in it runs
  [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

install_missing() {
  local missing=()
  command -v munged >/dev/null || missing+=(munge)
  for b in slurmctld slurmd sbatch; do command -v "$b" >/dev/null || { missing+=(slurm-wlm); break; }; done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" -eq 0 ] || cannot "${missing[*]} not installed and not root (apt-get needs root)"
  command -v apt-get >/dev/null || cannot "${missing[*]} not installed and no apt-get on this machine"
  say "installing ${missing[*]} (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null || cannot "apt-get update failed"
  apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null || cannot "apt-get install slurm-wlm munge failed"
}

write_conf() {
  local cpus mem
  cpus=$(($(nproc) * 2))
  [ "$cpus" -ge 4 ] || cpus=4
  mem=$(free -m | awk '/^Mem:/ {print $2}')
  mem=$((mem > 1024 ? mem - 512 : mem))
  mkdir -p "$DIR/spool/ctld" "$DIR/spool/d" "$DIR/log" "$DIR/munge"
  cat >"$CONF.new" <<EOF
# written by scripts/slurm_local.sh: a one-node cluster on $HOST
ClusterName=gensimlocal
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
SlurmctldPort=${GENSIM_SLURMCTLD_PORT:-16817}
SlurmdPort=${GENSIM_SLURMD_PORT:-16818}
StateSaveLocation=$DIR/spool/ctld
SlurmdSpoolDir=$DIR/spool/d
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
# scheduling passes every second: a requeued job whose begin time has come starts within a second (the
# tests' requeued jobs waited 9-21 s for the next 30-s backfill pass; a begin time passing is no event)
SchedulerParameters=bf_interval=1,sched_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/log/jobcomp.txt
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
# quick turnaround for tests: a requeued job may start again at once, a killed step ends within KillWait
MinJobAge=300
KillWait=10
UnkillableStepTimeout=60
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
Waittime=0
NodeName=$HOST CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=$MAX_TIME DefaultTime=10 State=UP OverSubscribe=NO
EOF
  mv "$CONF.new" "$CONF"
}

start_munge() {
  alive "$DIR/munged.pid" && return 0
  if [ ! -s "$DIR/munge/munge.key" ]; then
    # a key for this cluster only (the system's munge key, if any, stays as it is)
    (umask 077 && dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none)
  fi
  chmod 700 "$DIR/munge"
  chmod 400 "$DIR/munge/munge.key"
  munged 9>&- --force --key-file="$DIR/munge/munge.key" --socket="$DIR/munge/munge.socket" \
    --pid-file="$DIR/munged.pid" --log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/munge.seed" \
    || { tail -5 "$DIR/log/munged.log" >&2 || true; say "munged did not start"; exit 4; }
}

wait_for() { # wait_for SECONDS CMD...: retry CMD every 0.2 s until it succeeds
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.2
  done
}

node_idle() {
  local state
  state=$(SLURM_CONF=$CONF sinfo -h -n "$HOST" -o %t 2>/dev/null | head -1)
  case "$state" in idle* | mix* | alloc*) return 0 ;; *) return 1 ;; esac
}

start() {
  local t0=$SECONDS
  install_missing
  if alive "$DIR/munged.pid" && alive "$DIR/slurmctld.pid" && alive "$DIR/slurmd.pid"; then
    say "already running (SLURM_CONF=$CONF)"
    return 0
  fi
  [ "$(id -u)" -eq 0 ] || cannot "the daemons run as root here (SlurmUser=root) and this is uid $(id -u)"
  write_conf
  start_munge
  if ! alive "$DIR/slurmctld.pid"; then
    # -i: ignore state files a previous cluster left (the job ids start again)
    slurmctld -f "$CONF" -i 9>&- || { tail -20 "$DIR/log/slurmctld.log" >&2 || true; say "slurmctld did not start"; exit 4; }
  fi
  wait_for 30 env SLURM_CONF="$CONF" scontrol ping \
    || { tail -20 "$DIR/log/slurmctld.log" >&2 || true; say "slurmctld does not answer"; exit 4; }
  if ! alive "$DIR/slurmd.pid"; then
    slurmd -f "$CONF" 9>&- || { tail -20 "$DIR/log/slurmd.log" >&2 || true; say "slurmd did not start"; exit 4; }
  fi
  if ! wait_for 30 node_idle; then
    # a node that a previous run left DOWN/DRAINED: bring it back once
    SLURM_CONF=$CONF scontrol update nodename="$HOST" state=resume >/dev/null 2>&1 || true
    wait_for 15 node_idle || { tail -20 "$DIR/log/slurmd.log" >&2 || true; SLURM_CONF=$CONF sinfo -N -l >&2 || true
      say "node $HOST did not become idle"; exit 4; }
  fi
  say "started in $((SECONDS - t0)) s: node $HOST, partition debug (MaxTime ${MAX_TIME} min); export SLURM_CONF=$CONF"
}

stop_one() { # stop_one NAME: TERM the pid in NAME.pid, wait up to 10 s, then KILL
  local pidfile=$DIR/$1.pid pid
  alive "$pidfile" || { rm -f "$pidfile"; return 0; }
  pid=$(cat "$pidfile")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
  rm -f "$pidfile"
}

stop() {
  # jobs first, so that no task outlives its slurmd
  if alive "$DIR/slurmctld.pid"; then
    SLURM_CONF=$CONF scancel --full --quiet --partition=debug >/dev/null 2>&1 || true
    for _ in $(seq 50); do
      [ -z "$(SLURM_CONF=$CONF squeue -h -o %i 2>/dev/null)" ] && break
      sleep 0.2
    done
  fi
  stop_one slurmd
  stop_one slurmctld
  stop_one munged
  say "stopped"
}

status() {
  local d rc=0
  for d in munged slurmctld slurmd; do
    if alive "$DIR/$d.pid"; then echo "$d: running (pid $(cat "$DIR/$d.pid"))"; else echo "$d: not running"; rc=1; fi
  done
  [ $rc -ne 0 ] || SLURM_CONF=$CONF sinfo
  echo "export SLURM_CONF=$CONF"
  return $rc
}

lock() { # one start or stop at a time (pytest-xdist workers may start the cluster together); the daemons
  # are started with fd 9 closed, so that they do not hold the lock
  mkdir -p "$(dirname "$DIR")"
  exec 9>"$DIR.lock"
  flock -w 120 9 || { say "another start/stop holds $DIR.lock"; exit 4; }
}

case "${1:-}" in
  start) lock; start ;;
  stop) lock; stop ;;
  status) status ;;
  env) echo "export SLURM_CONF=$CONF" ;;
  *) echo "usage: $0 start|stop|status|env" >&2; exit 2 ;;
esac
