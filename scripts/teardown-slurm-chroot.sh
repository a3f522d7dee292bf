#!/usr/bin/env bash
# =============================================================================
# teardown-slurm-chroot.sh RELEASE [--keep-mounts] [--purge]
#   Stop the Slurm testbed that setup-slurm-chroot.sh started in its chroot, then unmount
#   DIR/dev/pts, DIR/dev, DIR/sys, DIR/proc. The chroot, its packages, state and job
#   history stay (cached: setup-slurm-chroot.sh brings it back in ~2 s). --purge also
#   deletes the chroot (only once nothing is mounted below it).
#
# Processes are stopped ONLY through the PID files the lab's daemons wrote under
# DIR/var/lib/slurm-testbed/run, and only when /proc/PID/comm is the daemon AND
# /proc/PID/root is DIR: the host's own 22.05 testbed uses the same names and paths
# outside the chroot and is never touched. No pkill/killall.
# Order: jobs (scancel), slurmd(s), slurmctld, slurmdbd, mariadbd, munged.
# =============================================================================
set -uo pipefail
RELEASE=${1:?usage: $0 24.11|26.05 [--keep-mounts] [--purge]}
case "$RELEASE" in
  24.11|trixie) SUITE=trixie ;;
  26.05|sid) SUITE=sid ;;
  *) echo "unknown release $RELEASE (24.11 or 26.05)" >&2; exit 2 ;;
esac
shift
KEEP_MOUNTS=0; PURGE=0
for a in "$@"; do
  case "$a" in --keep-mounts) KEEP_MOUNTS=1 ;; --purge) PURGE=1 ;;
    *) echo "unknown option $a" >&2; exit 2 ;; esac
done
ROOT=${ROOT:-/var/lib/slurm-io-testbeds}
DIR=$(realpath -m "$ROOT/$SUITE")
LAB=$DIR/var/lib/slurm-testbed
[ "$(id -u)" = 0 ] || { echo "must run as root" >&2; exit 1; }
[ "$DIR" != / ] || { echo "DIR must not be /" >&2; exit 1; }
[ -d "$DIR" ] || { echo "no chroot at $DIR: nothing to do"; exit 0; }
T0=$(date +%s.%N)

ours() {  # ours <pid> <comm>: that process runs in this chroot under that name
  local pid=$1 comm=$2
  [ -n "$pid" ] && [ -r "/proc/$pid/comm" ] && [ "$(cat "/proc/$pid/comm")" = "$comm" ] \
    && [ "$(readlink "/proc/$pid/root")" = "$DIR" ]
}
stop_pidfile() {  # stop_pidfile <pidfile> <comm>: TERM, wait up to 30 s, then KILL
  local pf=$1 comm=$2 pid i
  [ -s "$pf" ] || return 0
  pid=$(tr -dc 0-9 <"$pf")
  if ! ours "$pid" "$comm"; then echo "  $comm: not running in $DIR (stale $pf)"; rm -f "$pf"; return 0; fi
  echo "  stopping $comm pid $pid"
  kill -TERM "$pid" 2>/dev/null
  for i in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  if kill -0 "$pid" 2>/dev/null; then echo "  $comm pid $pid ignored TERM: KILL"; kill -KILL "$pid"; fi
  rm -f "$pf"
}

if [ -d "$LAB/run" ]; then
  echo "==> cancelling jobs"
  if [ -s "$LAB/run/slurmctld.pid" ] && ours "$(tr -dc 0-9 <"$LAB/run/slurmctld.pid")" slurmctld \
     && mountpoint -q "$DIR/proc"; then
    jobs=$(chroot "$DIR" squeue -h -o %A 2>/dev/null)
    if [ -n "$jobs" ]; then
      # shellcheck disable=SC2086
      chroot "$DIR" scancel $jobs
      for i in $(seq 1 60); do [ -z "$(chroot "$DIR" squeue -h -o %A 2>/dev/null)" ] && break; sleep 0.5; done
    fi
  fi
  echo "==> stopping daemons"
  for pf in "$LAB"/run/slurmd-*.pid; do [ -e "$pf" ] && stop_pidfile "$pf" slurmd & done; wait
  stop_pidfile "$LAB/run/slurmctld.pid" slurmctld
  stop_pidfile "$LAB/run/slurmdbd.pid" slurmdbd
  stop_pidfile "$LAB/run/mysqld/mysqld.pid" mariadbd
  stop_pidfile "$LAB/run/munge/munged.pid" munged
fi

# anything else still running with its root in DIR (a hook, a job step)? Listed, not killed:
# the lab started them; end them by PID.
left=$(for p in /proc/[0-9]*; do [ "$(readlink "$p/root" 2>/dev/null)" = "$DIR" ] && echo "${p#/proc/} $(cat "$p/comm")"; done)
[ -n "$left" ] && { echo "WARNING: processes still running in $DIR (pid comm):"; echo "$left"; }

if [ "$KEEP_MOUNTS" = 0 ] || [ "$PURGE" = 1 ]; then
  echo "==> unmounting"
  # deepest first: also bind mounts tests left behind (e.g. a test database's directory)
  grep -o " $DIR/[^ ]*" /proc/mounts | sed 's/^ //' | sort -r | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m"
  done
fi
if [ "$PURGE" = 1 ]; then
  if [ -n "$left" ] || grep -q " $DIR/" /proc/mounts; then
    echo "not purging $DIR: processes or mounts left" >&2; exit 1
  fi
  echo "==> deleting $DIR"
  rm -rf --one-file-system "${DIR:?}" "$ROOT/$SUITE.bin"
fi
echo "==> done in $(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')s"
