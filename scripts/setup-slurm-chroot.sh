#!/usr/bin/env bash
# =============================================================================
# setup-slurm-chroot.sh RELEASE - a real Slurm 24.11 or 26.05 testbed in a Debian
# chroot, next to (not instead of) the host's 22.05 testbed of setup-slurm.sh.
#
#   bash scripts/setup-slurm-chroot.sh 24.11     # Debian trixie's slurm-wlm
#   bash scripts/setup-slurm-chroot.sh 26.05     # Debian sid's slurm-wlm
#
# Adapted from the recipe in ../shared/reference/slurm-testbed-chroot (written for this
# project); the lab inside the chroot is this project's own scripts/setup-slurm.sh, run there
# with SKIP_APT=1 and other ports. Idempotent, each step checks first:
#   1. debootstrap --variant=minbase SUITE into $ROOT/SUITE  (once; the chroot is cached
#      between runs on the same machine)
#   2. mount proc, sys, dev, dev/pts under it                (if not mounted)
#   3. apt-get install Slurm, MariaDB, munge and the Python the project's hook needs
#      (python3, python3-psycopg, python3-hostlist) inside the chroot (if missing)
#   4. copy scripts/setup-slurm.sh in and run it there: munged, MariaDB, slurmdbd,
#      slurmctld, NODES x slurmd, users alice/bob (other uids than on the host!)
#   5. host-side wrappers $ROOT/SUITE.bin/{sacct,scontrol,...}: `chroot DIR /usr/bin/CMD`,
#      for code that is given absolute paths of Slurm commands (tests, `--sacct`)
# Re-run while up: ~1-2 s. After teardown-slurm-chroot.sh: restarts with the job history.
#
# Knobs (environment): ROOT=/var/lib/slurm-io-testbeds  MIRROR=http://deb.debian.org/debian
#   CLUSTER and NODE_PREFIX (24.11: lab2411, trixie01..; 26.05: lab2605, sid01..), PORT_BASE (24.11: 27000, 26.05: 37000; slurmd PORT_BASE+1.., slurmctld +817, slurmdbd
#   +819, MariaDB +306; the host's 22.05 testbed uses 17001.., 16817, 16819, 13306),
#   EXTRA_PKGS, and every knob of setup-slurm.sh (NODES, HOOK_EPILOG_SLURMCTLD, PROBE, ...;
#   hook paths are paths inside the chroot).
# Pitfalls (see docs/jobs.md, "Testbeds"): the chroot's daemons look exactly like the host
# testbed's in ps (same names, same /var/lib/slurm-testbed paths): never stop them by name;
# teardown-slurm-chroot.sh checks /proc/PID/root. Always run Slurm commands as
# `chroot DIR CMD`: the host's own sacct talks to the host's cluster.
# =============================================================================
set -euo pipefail
RELEASE=${1:?usage: $0 24.11|26.05}
case "$RELEASE" in
  24.11|trixie) SUITE=trixie; def_base=27000; def_cluster=lab2411; def_prefix=trixie ;;
  26.05|sid) SUITE=sid; def_base=37000; def_cluster=lab2605; def_prefix=sid ;;
  *) echo "unknown release $RELEASE (24.11 or 26.05; 22.05 is the host: setup-slurm.sh)" >&2
     exit 2 ;;
esac
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=${ROOT:-/var/lib/slurm-io-testbeds}
DIR=$ROOT/$SUITE
MIRROR=${MIRROR:-http://deb.debian.org/debian}
PORT_BASE=${PORT_BASE:-$def_base}
# each release's cluster its own name and node names (the host's 22.05: `lab`, node01..): two testbeds up at once
# are two clusters on one filesystem, as slurm-io sees them (docs/jobs.md)
CLUSTER=${CLUSTER:-$def_cluster}
NODE_PREFIX=${NODE_PREFIX:-$def_prefix}
PKGS=(munge slurm-wlm slurm-client slurmd slurmctld slurmdbd mariadb-server mariadb-client
      procps python3 python3-psycopg python3-hostlist ${EXTRA_PKGS:-})
LAB_IN=/var/lib/slurm-testbed          # the lab's path inside the chroot

[ "$(id -u)" = 0 ] || { echo "must run as root" >&2; exit 1; }
mkdir -p "$ROOT"; chmod 755 "$ROOT"
# one set-up per chroot at a time (pytest sessions and scripts/test.sh may race)
exec 9>"$ROOT/.$SUITE.lock"
flock 9

# 26.05's ports (37000..37819) lie inside Linux's ephemeral range (32768-60999): another
# lab's daemon can hold one as the source port of a lasting connection (seen: the 24.11
# slurmctld's link to its slurmdbd on 37002, so sid02 never bound and never registered).
# Reserve both labs' ranges, whichever lab starts first, so no source port takes them.
for reserve in 27000-27999 37000-37999; do
  cur=$(cat /proc/sys/net/ipv4/ip_local_reserved_ports 2>/dev/null || true)
  case ",$cur," in
    *",$reserve,"*) ;;
    *) sysctl -q -w net.ipv4.ip_local_reserved_ports="${cur:+$cur,}$reserve" || true ;;
  esac
done

T0=$(date +%s.%N); TIMING=()
step_start() { STEP=$1; TS=$(date +%s.%N); echo "==> [$(date +%T)] $STEP"; }
step_end() {
  local dt; dt=$(awk -v a="$TS" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
  TIMING+=("$(printf '%-30s %7ss' "$STEP" "$dt")")
}
in_chroot() {   # a clean environment inside the chroot: no host variable leaks in
  chroot "$DIR" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 TERM=dumb DEBIAN_FRONTEND=noninteractive "$@" 9>&-
}
mounted() { mountpoint -q "$1"; }

step_start "debootstrap $SUITE"
if [ ! -e "$DIR/.slurm-io-debootstrap-ok" ]; then
  command -v debootstrap >/dev/null || {
    apt-get install -y -q debootstrap || { apt-get update -q && apt-get install -y -q debootstrap; }
  }
  if [ -d "$DIR" ] && [ -n "$(ls -A "$DIR" 2>/dev/null)" ]; then
    # a half-finished debootstrap: wipe it, but never with something mounted below it
    if grep -q " $DIR/" /proc/mounts; then
      echo "$DIR is incomplete and has mounts below it: run teardown-slurm-chroot.sh first" >&2
      exit 1
    fi
    echo "    removing incomplete $DIR"; rm -rf --one-file-system "${DIR:?}"
  fi
  mkdir -p "$DIR"
  debootstrap --variant=minbase "$SUITE" "$DIR" "$MIRROR" 9>&-
  date -Is >"$DIR/.slurm-io-debootstrap-ok"
fi
step_end

step_start "mounts"
mounted "$DIR/proc"    || mount -t proc proc "$DIR/proc"
mounted "$DIR/sys"     || mount -t sysfs sysfs "$DIR/sys"
mounted "$DIR/dev"     || mount --bind /dev "$DIR/dev"
mounted "$DIR/dev/pts" || mount --bind /dev/pts "$DIR/dev/pts"
cp -f /etc/resolv.conf "$DIR/etc/resolv.conf" 2>/dev/null || true
cp -f /etc/hosts "$DIR/etc/hosts"
# sacct prints local time: the chroot's zone must be the host's
rm -f "$DIR/etc/localtime"; cp -L /etc/localtime "$DIR/etc/localtime"
[ -e /etc/timezone ] && cp -f /etc/timezone "$DIR/etc/timezone"
# sid's Release has a Valid-Until that a clock ahead of the mirror calls expired
printf 'Acquire::Check-Valid-Until "false";\n' >"$DIR/etc/apt/apt.conf.d/99slurm-io"
if [ ! -e "$DIR/usr/sbin/policy-rc.d" ]; then   # package postinsts start no daemon here
  printf '#!/bin/sh\n# from setup-slurm-chroot.sh: no service starts in this chroot\nexit 101\n' \
    >"$DIR/usr/sbin/policy-rc.d"
  chmod 755 "$DIR/usr/sbin/policy-rc.d"
fi
step_end

step_start "apt-get install (in chroot)"
missing=()
for p in "${PKGS[@]}"; do
  in_chroot dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
    || missing+=("$p")
done
if (( ${#missing[@]} )); then
  in_chroot apt-get update -q
  in_chroot apt-get install -y -q --no-install-recommends "${missing[@]}"
  in_chroot apt-get clean
fi
step_end

step_start "lab (setup-slurm.sh in chroot)"
mkdir -p "$DIR/opt/slurm-io-testbed"
install -m 755 "$HERE/setup-slurm.sh" "$DIR/opt/slurm-io-testbed/setup-slurm.sh"
knobs=()
for k in NODES NODE_PREFIX CPUS_PER_NODE TEST_USERS ACCOUNT CLUSTER PROBE PROLOG_EPILOG_TIMEOUT \
         HOOK_PROLOG HOOK_EPILOG HOOK_PROLOG_SLURMCTLD HOOK_EPILOG_SLURMCTLD HOOK_JOBCOMP \
         HOOK_MAILPROG; do
  [ -n "${!k+x}" ] && knobs+=("$k=${!k}")
done
if ! in_chroot LAB="$LAB_IN" SKIP_APT=1 HOST="$(uname -n | cut -d. -f1)" \
    SLURMCTLD_PORT=$((PORT_BASE+817)) SLURMDBD_PORT=$((PORT_BASE+819)) \
    MYSQL_PORT=$((PORT_BASE+306)) SLURMD_PORT_BASE="$PORT_BASE" "${knobs[@]}" \
    bash /opt/slurm-io-testbed/setup-slurm.sh >"$ROOT/$SUITE.setup.log" 2>&1; then
  tail -40 "$ROOT/$SUITE.setup.log" >&2
  exit 1
fi
step_end

step_start "host-side wrappers"
BIN=$ROOT/$SUITE.bin
mkdir -p "$BIN"
for cmd in sacct scontrol squeue sbatch scancel sinfo srun sacctmgr; do
  cat >"$BIN/$cmd.tmp" <<EOF
#!/bin/sh
# generated by setup-slurm-chroot.sh: $cmd of the Slurm in $DIR (a clean environment)
exec /usr/sbin/chroot $DIR /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \\
  \${SLURM_TIME_FORMAT:+SLURM_TIME_FORMAT=\$SLURM_TIME_FORMAT} /usr/bin/$cmd "\$@"
EOF
  chmod 755 "$BIN/$cmd.tmp"; mv -f "$BIN/$cmd.tmp" "$BIN/$cmd"
done
step_end

TOTAL=$(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
{
  echo "setup-slurm-chroot.sh $RELEASE ($SUITE, $DIR) finished $(date -Is), total ${TOTAL}s"
  printf '  %s\n' "${TIMING[@]}"
} | tee "$ROOT/$SUITE.timing.txt"
echo "Slurm $(in_chroot slurmctld -V | awk '{print $2}') up in $DIR: chroot $DIR sinfo;" \
  "wrappers in $BIN; stop: bash $HERE/teardown-slurm-chroot.sh $RELEASE"
