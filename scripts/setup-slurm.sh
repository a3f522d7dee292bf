#!/usr/bin/env bash
# =============================================================================
# setup-slurm.sh - slurm-io's single-host, multi-node REAL Slurm 22.05 testbed
#
# The project's own copy of /work/shared/reference/slurm-testbed/setup-slurm.sh
# (same knobs, same layout), used by scripts/test.sh and tests/slurm_fixtures.py
# so that the job-record tests run against a real slurmctld/slurmdbd/sacct.
# Differences from the reference: a lock so that concurrent test sessions do not
# set up the same lab at once, and `apt-get update` only when the package lists
# do not know the packages (or an install from them fails).
#
# Brings up, on one Debian 12 (bookworm) machine, as root, WITHOUT systemd and
# WITHOUT cgroups:
#   munged      (private socket under $LAB/run/munge)
#   MariaDB     (private datadir under $LAB/mysql, TCP 127.0.0.1:$MYSQL_PORT)
#   slurmdbd    (accounting, MySQL backend)
#   slurmctld   (controller, runs as SlurmUser=slurm)
#   N x slurmd  (node01..nodeNN, one process each, distinct ports; works
#                because Debian's build has MULTIPLE_SLURMD=Yes)
# plus Prolog/Epilog/PrologSlurmctld/EpilogSlurmctld/jobcomp-script/MailProg
# hooks that dump their whole environment into $LAB/dumps/.
#
# Idempotent: every step checks first; re-running only starts what is not
# running, and rewrites config (reconfiguring slurmctld if it changed).
#
# Usage (as root):  bash scripts/setup-slurm.sh
# Knobs (environment variables):
#   LAB=/var/lib/slurm-testbed        where everything lives (must be traversable, 0755)
#   NODES=4                  number of emulated nodes (node01..nodeNN, <=99)
#   NODE_PREFIX=node         their names' prefix (two clusters on one filesystem have
#                            different node names)
#   CPUS_PER_NODE=2          CPUs= per node (keep <= real cores, else DRAIN)
#   TEST_USERS="alice bob"   local users to create (useradd -m) + sacctmgr add
#   ACCOUNT=research         Slurm account the users are put in
#   CLUSTER=lab              ClusterName
#   SKIP_APT=1               do not run apt-get (packages already installed)
#   APT_OPTS="..."           extra apt-get options, e.g.
#                            "-o Dir::Cache::archives=/var/tmp/x" (cold-cache test)
#   PROBE=1                  built-in EpilogSlurmctld/jobcomp hooks also record
#                            what scontrol/sacct say about the job at that moment
#                            (adds ~3 s of COMPLETING per job)
#   PROLOG_EPILOG_TIMEOUT=120  seconds before a hung (node or ctld) prolog/epilog
#                            is killed (a killed node Epilog DRAINS the node)
#   HOOK_PROLOG, HOOK_EPILOG, HOOK_PROLOG_SLURMCTLD, HOOK_EPILOG_SLURMCTLD,
#   HOOK_JOBCOMP, HOOK_MAILPROG
#                            absolute paths of your own hook programs to use
#                            instead of the built-in env dumpers. NOTE: ctld-side
#                            hooks run as SlurmUser (slurm) with an EMPTY env (no
#                            PATH); node-side ones run as root.
#   SLURMCTLD_PORT=16817 SLURMDBD_PORT=16819 MYSQL_PORT=13306 SLURMD_PORT_BASE=17000
#   HOST                     SlurmctldHost/NodeHostname (default: uname -n, short)
#
# Also runs inside the 24.11 / 26.05 chroots of setup-slurm-chroot.sh (SKIP_APT=1 there):
# what those releases need differently is decided from what is installed (slurmd -V,
# mariadbd's options), so the 22.05 lab's files stay as they were.
#
# After it: `source $LAB/env.sh` (only sets SLURM_CONF; /etc/slurm/slurm.conf is
# also a symlink to $LAB/etc/slurm.conf so plain `sbatch` works for any user).
# Stop everything with teardown-slurm.sh (by PID files, never by name).
# =============================================================================
set -euo pipefail

LAB=${LAB:-/var/lib/slurm-testbed}
NODES=${NODES:-4}
CPUS_PER_NODE=${CPUS_PER_NODE:-2}
TEST_USERS=${TEST_USERS-alice bob}
ACCOUNT=${ACCOUNT:-research}
CLUSTER=${CLUSTER:-lab}
NODE_PREFIX=${NODE_PREFIX:-node}
SKIP_APT=${SKIP_APT:-0}
APT_OPTS=${APT_OPTS:-}
PROBE=${PROBE:-0}
PROLOG_EPILOG_TIMEOUT=${PROLOG_EPILOG_TIMEOUT:-120}
SLURMCTLD_PORT=${SLURMCTLD_PORT:-16817}
SLURMDBD_PORT=${SLURMDBD_PORT:-16819}
MYSQL_PORT=${MYSQL_PORT:-13306}
SLURMD_PORT_BASE=${SLURMD_PORT_BASE:-17000}
DB_PASS=${DB_PASS:-slurmdbpass}     # lab only; MariaDB listens on 127.0.0.1 only

SLURM_USER=slurm                      # created by the slurmctld/slurmdbd packages
# SlurmctldHost MUST equal `hostname -s` (a minbase chroot has no hostname(1): uname -n)
HOST=${HOST:-$(uname -n | cut -d. -f1)}
MUNGE_SOCK=$LAB/run/munge/munge.socket.2
MYSQL_SOCK=$LAB/run/mysqld/mysqld.sock
PKGS=(munge slurm-wlm slurm-client slurmd slurmctld slurmdbd
      mariadb-server mariadb-client)

[ "$(id -u)" = 0 ] || { echo "must run as root" >&2; exit 1; }
(( NODES >= 1 && NODES <= 99 )) || { echo "NODES must be 1..99" >&2; exit 1; }

# One set-up at a time: pytest sessions of several engineers (and scripts/test.sh) may call
# this concurrently; the second waits and then finds everything running.
mkdir -p "$LAB"; chmod 755 "$LAB"
exec 9>"$LAB/.setup.lock"
flock 9   # (daemons started below get `9>&-`: they must not inherit the lock)

T0=$(date +%s.%N)
TIMING=()
step_start() { STEP=$1; TS=$(date +%s.%N); echo "==> [$(date +%T)] $STEP"; }
step_end() {
  local dt; dt=$(awk -v a="$TS" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
  TIMING+=("$(printf '%-28s %6ss' "$STEP" "$dt")")
}
# wait_for <seconds> <description> <command...>: poll every 0.25 s
wait_for() {
  local t=$1 what=$2; shift 2
  local end=$(( $(date +%s) + t ))
  until "$@" >/dev/null 2>&1; do
    if (( $(date +%s) >= end )); then echo "TIMEOUT waiting for $what" >&2; return 1; fi
    sleep 0.25
  done
}
# alive <pidfile> <comm>: true if pidfile names a live process with that comm
alive() {
  local pf=$1 comm=$2 pid
  [ -s "$pf" ] || return 1
  pid=$(tr -dc 0-9 <"$pf")
  [ -n "$pid" ] && [ -r "/proc/$pid/comm" ] && [ "$(cat "/proc/$pid/comm")" = "$comm" ]
}
# write_if_changed <dest> <mode> <owner>  (content on stdin); sets CHANGED=1
write_if_changed() {
  local dest=$1 mode=$2 owner=$3 tmp
  tmp=$(mktemp "$dest.XXXX")
  cat >"$tmp"
  if [ -f "$dest" ] && cmp -s "$tmp" "$dest"; then rm -f "$tmp"
  else mv -f "$tmp" "$dest"; CHANGED=1; fi
  chmod "$mode" "$dest"; chown "$owner" "$dest"
}

# -----------------------------------------------------------------------------
step_start "apt packages"
# -----------------------------------------------------------------------------
if [ "$SKIP_APT" != 1 ]; then
  missing=()
  for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
      || missing+=("$p")
  done
  if (( ${#missing[@]} )); then
    # Keep package postinst scripts from starting the system munge/mariadb
    # daemons (there is no systemd; invoke-rc.d would run /etc/init.d/*).
    made_policy=0
    if [ ! -e /usr/sbin/policy-rc.d ]; then
      printf '#!/bin/sh\n# temporary, from setup-slurm.sh\nexit 101\n' >/usr/sbin/policy-rc.d
      chmod 755 /usr/sbin/policy-rc.d; made_policy=1
    fi
    mkdir -p "$LAB"
    dpkg-query -W -f='${Package}\n' | sort >"$LAB/.dpkg-before" 2>/dev/null || true
    # A fresh machine has no package lists: update first. Lists that already know every
    # package save the update (~5-10 s); if they are stale (404), update and retry once.
    apt_install() {
      # shellcheck disable=SC2086
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        $APT_OPTS "${missing[@]}"
    }
    known=1
    for p in "${missing[@]}"; do
      apt-cache policy "$p" 2>/dev/null | grep -q 'Candidate: [0-9]' || known=0
    done
    # shellcheck disable=SC2086
    if (( ! known )) || ! apt_install; then
      # shellcheck disable=SC2086
      apt-get update -q $APT_OPTS
      apt_install
    fi
    # remember exactly what we added, so teardown --uninstall can undo it
    dpkg-query -W -f='${Package}\n' | sort | comm -13 "$LAB/.dpkg-before" - \
      >>"$LAB/.installed-by-setup"
    if (( made_policy )); then rm -f /usr/sbin/policy-rc.d; fi
  fi
fi
command -v slurmctld >/dev/null || { echo "slurmctld not installed" >&2; exit 1; }
step_end

# -----------------------------------------------------------------------------
step_start "dirs, users, munge key"
# -----------------------------------------------------------------------------
mkdir -p "$LAB"/{etc/munge,bin,run/munge,run/mysqld,log,state/ctld,spool,mysql,dumps,jobs}
chmod 755 "$LAB" "$LAB/etc" "$LAB/bin" "$LAB/run"
chown munge:munge "$LAB/etc/munge" "$LAB/run/munge"; chmod 700 "$LAB/etc/munge"; chmod 755 "$LAB/run/munge"
chown "$SLURM_USER:$SLURM_USER" "$LAB/log" "$LAB/state" "$LAB/state/ctld"
chown mysql:mysql "$LAB/mysql" "$LAB/run/mysqld"
chmod 1777 "$LAB/dumps" "$LAB/jobs"     # hooks run as root AND as slurm; jobs as users
if [ ! -s "$LAB/etc/munge/munge.key" ]; then
  dd if=/dev/urandom of="$LAB/etc/munge/munge.key" bs=1024 count=1 status=none
fi
chown munge:munge "$LAB/etc/munge/munge.key"; chmod 400 "$LAB/etc/munge/munge.key"
for u in $TEST_USERS; do
  if ! id "$u" >/dev/null 2>&1; then
    useradd -m -s /bin/bash "$u"; echo "$u" >>"$LAB/.users-created-by-setup"
  fi
  mkdir -p "$LAB/jobs/$u"; chown "$u:" "$LAB/jobs/$u"
done
step_end

# -----------------------------------------------------------------------------
step_start "munged"
# -----------------------------------------------------------------------------
if ! alive "$LAB/run/munge/munged.pid" munged; then
  rm -f "$MUNGE_SOCK" "$MUNGE_SOCK.lock"
  runuser -u munge -- /usr/sbin/munged \
    --socket="$MUNGE_SOCK" --key-file="$LAB/etc/munge/munge.key" \
    --pid-file="$LAB/run/munge/munged.pid" --log-file="$LAB/run/munge/munged.log" \
    --seed-file="$LAB/run/munge/munged.seed" 9>&-
fi
wait_for 20 munged bash -c "munge -S '$MUNGE_SOCK' -n | unmunge -S '$MUNGE_SOCK'"
step_end

# -----------------------------------------------------------------------------
step_start "mariadb"
# -----------------------------------------------------------------------------
if [ ! -d "$LAB/mysql/data/mysql" ]; then
  mariadb-install-db --no-defaults --user=mysql --datadir="$LAB/mysql/data" \
    --auth-root-authentication-method=socket --skip-test-db >"$LAB/log/mariadb-install-db.log" 2>&1
fi
# MariaDB >= 11.6 (trixie/sid: 11.8) defaults innodb_snapshot_isolation=ON; slurmdbd 26.05
# refuses it ("innodb_snapshot_isolation is enabled, which is not supported by Slurm ...")
MYSQL_EXTRA=()
if /usr/sbin/mariadbd --no-defaults --verbose --help 2>/dev/null | grep -q '^innodb-snapshot-isolation'; then
  MYSQL_EXTRA+=(--innodb-snapshot-isolation=OFF)
fi
if ! alive "$LAB/run/mysqld/mysqld.pid" mariadbd; then
  # --no-defaults: ignore /etc/mysql/*; settings are the ones slurmdbd checks for
  setsid /usr/sbin/mariadbd --no-defaults --user=mysql --datadir="$LAB/mysql/data" \
    --socket="$MYSQL_SOCK" --port="$MYSQL_PORT" --bind-address=127.0.0.1 \
    --pid-file="$LAB/run/mysqld/mysqld.pid" --log-error="$LAB/mysql/error.log" \
    --innodb-buffer-pool-size=256M --innodb-log-file-size=64M \
    --innodb-lock-wait-timeout=900 --max-allowed-packet=64M --skip-log-bin "${MYSQL_EXTRA[@]}" \
    </dev/null >/dev/null 2>&1 9>&- &
fi
wait_for 60 mariadb mariadb-admin --no-defaults -S "$MYSQL_SOCK" -u root ping
mariadb --no-defaults -S "$MYSQL_SOCK" -u root <<EOF
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
FLUSH PRIVILEGES;
EOF
step_end

# -----------------------------------------------------------------------------
step_start "hook scripts"
# -----------------------------------------------------------------------------
CHANGED=0
{
cat <<EOF
#!/bin/bash
# Generic "dump my environment" hook (Prolog, Epilog, PrologSlurmctld,
# EpilogSlurmctld, jobcomp/script, MailProg), called as: hook-dump.sh <hook> [args]
# Writes $LAB/dumps/<hook>.<jobid>.<node|ctld>[.<n>].env
# Test knobs, flipped at run time (no reconfigure needed):
#   $LAB/bin/<hook>.mode  = ok | fail | hang:<seconds>
#   $LAB/bin/probe        exists -> ctld-side hooks also record scontrol/sacct views
lab=$LAB
EOF
cat <<'EOF'
hook=$1; shift
node=${SLURMD_NODENAME:-ctld}
job=${SLURM_JOB_ID:-${JOBID:-nojob}}
out=$lab/dumps/$hook.$job.$node.env
n=0; while [ -e "$out" ]; do n=$((n+1)); out=$lab/dumps/$hook.$job.$node.$n.env; done
{
  echo "# hook=$hook"
  echo "# time_epoch=$(date +%s.%N) time=$(date -Is)"
  echo "# id=$(id)"
  echo "# pid=$$ ppid=$PPID parent=$(tr '\0' ' ' </proc/$PPID/cmdline 2>/dev/null)"
  echo "# cwd=$(pwd)"
  echo "# argv=$*"
  if [ "$hook" = mail ]; then echo "# stdin:"; sed 's/^/#   /'; fi
  echo "# ---- env | sort ----"
  env | sort
  if [ -e "$lab/bin/probe" ] && { [ "$hook" = epilog_slurmctld ] || [ "$hook" = jobcomp ]; }; then
    echo "# ---- probe: scontrol show job -o (at $(date +%s.%N)) ----"
    /usr/bin/timeout 20 /usr/bin/scontrol show job "$job" -o 2>&1 | sed 's/^/# /'
    echo "# ---- probe: sacct -X (at $(date +%s.%N)) ----"
    /usr/bin/timeout 20 /usr/bin/sacct -X -n -P -j "$job" -o JobID,State,ExitCode,Start,End,NodeList 2>&1 | sed 's/^/# /'
    sleep 3
    echo "# ---- probe: sacct -X 3s later (at $(date +%s.%N)) ----"
    /usr/bin/timeout 20 /usr/bin/sacct -X -n -P -j "$job" -o JobID,State,ExitCode,Start,End,NodeList 2>&1 | sed 's/^/# /'
  fi
} >"$out" 2>&1
mode=$(cat "$lab/bin/$hook.mode" 2>/dev/null || echo ok)
case "$mode" in
  fail)   echo "$hook: failing on purpose" >&2; exit 1 ;;
  hang:*) sleep "${mode#hang:}" ;;
esac
exit 0
EOF
} | write_if_changed "$LAB/bin/hook-dump.sh" 755 root:root
for h in prolog epilog prolog_slurmctld epilog_slurmctld jobcomp mail; do
  write_if_changed "$LAB/bin/$h.sh" 755 root:root <<EOF
#!/bin/bash
exec $LAB/bin/hook-dump.sh $h "\$@"
EOF
done
if [ "$PROBE" = 1 ]; then touch "$LAB/bin/probe"; else rm -f "$LAB/bin/probe"; fi
step_end

# -----------------------------------------------------------------------------
step_start "slurm.conf / slurmdbd.conf"
# -----------------------------------------------------------------------------
CHANGED=0
write_if_changed "$LAB/etc/slurmdbd.conf" 600 "$SLURM_USER:$SLURM_USER" <<EOF
# generated by setup-slurm.sh
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCK
DbdHost=localhost
DbdPort=$SLURMDBD_PORT
SlurmUser=$SLURM_USER
DebugLevel=info
LogFile=$LAB/log/slurmdbd.log
PidFile=$LAB/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$MYSQL_PORT
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
EOF
DBD_CHANGED=$CHANGED
CHANGED=0
last=$(printf '%02d' "$NODES")
NODESPEC="$NODE_PREFIX[01-$last]"; [ "$NODES" = 1 ] && NODESPEC=${NODE_PREFIX}01
PORTSPEC="[$((SLURMD_PORT_BASE+1))-$((SLURMD_PORT_BASE+NODES))]"; [ "$NODES" = 1 ] && PORTSPEC=$((SLURMD_PORT_BASE+1))
write_if_changed "$LAB/etc/slurm.conf" 644 root:root <<EOF
# generated by setup-slurm.sh
ClusterName=$CLUSTER
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=$SLURM_USER
SlurmdUser=root
SlurmctldPort=$SLURMCTLD_PORT
SlurmdPort=$((SLURMD_PORT_BASE))
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCK
CredType=cred/munge
StateSaveLocation=$LAB/state/ctld
# %n = node name: one spool/pid/log per emulated node (multiple slurmd)
SlurmdSpoolDir=$LAB/spool/slurmd-%n
SlurmdPidFile=$LAB/run/slurmd-%n.pid
SlurmdLogFile=$LAB/log/slurmd-%n.log
SlurmctldPidFile=$LAB/run/slurmctld.pid
SlurmctldLogFile=$LAB/log/slurmctld.log
SlurmctldDebug=info
SlurmdDebug=info
# --- no systemd, no cgroups ---
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
# jobacct_gather/linux reads /proc/<pid>/io -> sacct MaxDiskRead/Write, TRESUsage fs/disk
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=5
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MinJobAge=300
KillWait=5
InactiveLimit=0
# --- hooks ---
Prolog=${HOOK_PROLOG:-$LAB/bin/prolog.sh}
Epilog=${HOOK_EPILOG:-$LAB/bin/epilog.sh}
PrologSlurmctld=${HOOK_PROLOG_SLURMCTLD:-$LAB/bin/prolog_slurmctld.sh}
EpilogSlurmctld=${HOOK_EPILOG_SLURMCTLD:-$LAB/bin/epilog_slurmctld.sh}
PrologEpilogTimeout=$PROLOG_EPILOG_TIMEOUT
JobCompType=jobcomp/script
JobCompLoc=${HOOK_JOBCOMP:-$LAB/bin/jobcomp.sh}
MailProg=${HOOK_MAILPROG:-$LAB/bin/mail.sh}
# --- accounting ---
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$SLURMDBD_PORT
# GOTCHA: for connections to slurmdbd the munge socket is taken from
# AccountingStoragePass, not from AuthInfo (else: "Failed to access
# /run/munge/munge.socket.2" from sacct/sacctmgr)
AccountingStoragePass=$MUNGE_SOCK
AccountingStoreFlags=job_comment,job_script,job_env
# --- nodes: $NODES slurmd processes on this one host, one port each ---
NodeName=$NODESPEC NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$PORTSPEC CPUs=$CPUS_PER_NODE RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=$NODESPEC Default=YES MaxTime=INFINITE State=UP
EOF
# 23.x+: slurmd initialises the cgroup plugin even with proctrack/linuxproc + task/none and
# fails without a mounted /sys/fs/cgroup ("No filesystem mounted on /sys/fs/cgroup" /
# "slurmd initialization failed"): no cgroups in this lab. (22.05 does not need it.)
CONF_FILES=(slurm.conf slurmdbd.conf)
SLURM_MAJOR=$(/usr/sbin/slurmd -V | awk '{split($2, v, "."); print v[1]}')
if (( SLURM_MAJOR >= 23 )); then
  write_if_changed "$LAB/etc/cgroup.conf" 644 root:root <<EOF
# generated by setup-slurm.sh: no cgroups in this lab
CgroupPlugin=disabled
EOF
  CONF_FILES+=(cgroup.conf)
fi
CONF_CHANGED=$CHANGED
mkdir -p /etc/slurm
for f in "${CONF_FILES[@]}"; do
  if [ -e "/etc/slurm/$f" ] && [ "$(readlink "/etc/slurm/$f")" != "$LAB/etc/$f" ]; then
    mv "/etc/slurm/$f" "/etc/slurm/$f.bak-slurmlab"
  fi
  ln -sfn "$LAB/etc/$f" "/etc/slurm/$f"
done
echo "export SLURM_CONF=$LAB/etc/slurm.conf" >"$LAB/env.sh"
export SLURM_CONF=$LAB/etc/slurm.conf
step_end

# -----------------------------------------------------------------------------
step_start "slurmdbd"
# -----------------------------------------------------------------------------
if alive "$LAB/run/slurmdbd.pid" slurmdbd && [ "$DBD_CHANGED" = 1 ]; then
  kill "$(cat "$LAB/run/slurmdbd.pid")"; wait_for 30 "slurmdbd exit" bash -c "! kill -0 $(cat "$LAB/run/slurmdbd.pid")"
fi
if ! alive "$LAB/run/slurmdbd.pid" slurmdbd; then /usr/sbin/slurmdbd 9>&-; fi
wait_for 60 slurmdbd sacctmgr -n -P show cluster
step_end

# -----------------------------------------------------------------------------
step_start "sacctmgr cluster/account/users"
# -----------------------------------------------------------------------------
# (capture first, then grep: `cmd | grep -q` + pipefail can fail on SIGPIPE)
have=$(sacctmgr -n -P show cluster format=cluster)
grep -qx "$CLUSTER" <<<"$have" || sacctmgr -i add cluster "$CLUSTER" >/dev/null
have=$(sacctmgr -n -P show account format=account)
grep -qx "$ACCOUNT" <<<"$have" \
  || sacctmgr -i add account "$ACCOUNT" Cluster="$CLUSTER" Description="lab" Organization=lab >/dev/null
for u in root $TEST_USERS; do
  have=$(sacctmgr -n -P show assoc where user="$u" account="$ACCOUNT" format=user)
  grep -qx "$u" <<<"$have" \
    || sacctmgr -i add user "$u" Account="$ACCOUNT" DefaultAccount="$ACCOUNT" >/dev/null
done
step_end

# -----------------------------------------------------------------------------
step_start "slurmctld"
# -----------------------------------------------------------------------------
# A new ClusterName or new node names cannot be reconfigured: slurmctld refuses state saved
# under another name. Stop the lab's daemons (by PID file) and drop the saved state (the
# testbed's queue; the job history stays in slurmdbd), then start again under the new name.
saved=$LAB/state/ctld/clustername
identity="$CLUSTER $NODE_PREFIX"
was=$(cat "$LAB/state/identity" 2>/dev/null \
      || { [ -s "$saved" ] && echo "$(cut -d'|' -f1 <"$saved" | tr -d '\n') node"; } || true)
if [ -n "$was" ] && [ "$was" != "$identity" ]; then
  for pidf in "$LAB"/run/slurmctld.pid "$LAB"/run/slurmd-*.pid; do
    [ -e "$pidf" ] || continue
    pid=$(cat "$pidf"); kill "$pid" 2>/dev/null || true
    wait_for 30 "$(basename "$pidf" .pid) exit" bash -c "! kill -0 $pid 2>/dev/null"
    rm -f "$pidf"
  done
  find "$LAB/state/ctld" -mindepth 1 -delete
fi
mkdir -p "$LAB/state"; echo "$identity" >"$LAB/state/identity"
if alive "$LAB/run/slurmctld.pid" slurmctld; then
  if [ "$CONF_CHANGED" = 1 ]; then scontrol reconfigure; fi
else
  /usr/sbin/slurmctld 9>&-
fi
wait_for 60 slurmctld bash -c "scontrol ping | grep -q 'is UP'"
step_end

# -----------------------------------------------------------------------------
step_start "slurmd x $NODES"
# -----------------------------------------------------------------------------
for i in $(seq 1 "$NODES"); do
  n=$(printf '%s%02d' "$NODE_PREFIX" "$i")
  mkdir -p "$LAB/spool/slurmd-$n"   # 24.11+ does not make its SlurmdSpoolDir itself
  alive "$LAB/run/slurmd-$n.pid" slurmd || /usr/sbin/slurmd -N "$n" 9>&-
done
# all nodes registered (no '*' = not responding, no unknown/down)
nodes_up() {
  local s; s=$(sinfo -h -N -o '%N %t')
  [ "$(wc -l <<<"$s")" -ge "$NODES" ] && ! grep -qE '\*|unk|down|boot' <<<"$s"
}
wait_for 90 "slurmd registration" nodes_up
step_end

# -----------------------------------------------------------------------------
TOTAL=$(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
{
  echo "setup-slurm.sh finished $(date -Is) on $HOST, total ${TOTAL}s"
  printf '  %s\n' "${TIMING[@]}"
} | tee "$LAB/setup-timing.txt"
sinfo -N -o '%N %T %c %m %P'
echo "Use:  source $LAB/env.sh   (or just use /etc/slurm/slurm.conf symlink)"
