#!/usr/bin/env bash
# Idempotent set-up on Debian 12: system packages the project runs against, and a virtualenv
# (.venv) with slurm-io and every role's extra (`.[all]`: pyproject.toml) installed in editable
# mode. Safe to run again; quick when done before.
#   SLURM_IO_EXTRAS=test  also installs the test tools (pytest, hypothesis, ruff, aiosmtpd).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
# PostgreSQL server binaries for the embedded private database (and the tests). Debian's
# package would create and start a cluster on port 5432: tell postgresql-common not to.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    mkdir -p /etc/postgresql-common
    if [ ! -f /etc/postgresql-common/createcluster.conf ] || \
       ! grep -q '^create_main_cluster' /etc/postgresql-common/createcluster.conf; then
        echo "create_main_cluster = false" >> /etc/postgresql-common/createcluster.conf
    fi
    need_apt+=(postgresql-15)
fi
python3 -m venv --help >/dev/null 2>&1 || need_apt+=(python3-venv)
python3 -c 'import ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
# The tests render the I/O mail's HTML part to PNG with headless Chromium (tests/mail).
case ",${SLURM_IO_EXTRAS:-}," in
    *,test,*)
        command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
        # the e2e hook test runs the hook as SlurmUser, who cannot reach a Python under /root
        [ -x /usr/bin/python3 ] || need_apt+=(python3)
        # the exporter test scrapes it with Debian's Prometheus (started by the test itself,
        # on loopback, in a temp dir); the top test drives the interactive mode in tmux
        command -v prometheus >/dev/null 2>&1 || need_apt+=(prometheus)
        command -v tmux >/dev/null 2>&1 || need_apt+=(tmux)
        # tests/site: a venv of the system Python for other users, certificates, unit checks
        /usr/bin/python3 -c 'import ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
        command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)
        command -v systemd-analyze >/dev/null 2>&1 || need_apt+=(systemd)
        command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
        # MUNGE: munged, munge/unmunge (the fallback backend) and libmunge.so.2, which the
        # service and the client load with ctypes (slurm_io/munge_lib.py; no -dev package)
        command -v munged >/dev/null 2>&1 || [ -x /usr/sbin/munged ] || need_apt+=(munge)
        ldconfig -p 2>/dev/null | grep -q 'libmunge\.so\.2 ' || need_apt+=(libmunge2)
        # tests/collect/test_kill_during_save.py holds one system call of a state save
        command -v strace >/dev/null 2>&1 || need_apt+=(strace) ;;
esac
if [ "${#need_apt[@]}" -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup: need root to install: ${need_apt[*]}" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # policy-rc.d: the packages' own services (prometheus) are not started by the install
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
        chmod +x /usr/sbin/policy-rc.d
        apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
        rm -f /usr/sbin/policy-rc.d
    else
        apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
    fi
fi

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
extras="${SLURM_IO_EXTRAS:-}"
spec=".[all]"
[ -n "$extras" ] && spec=".[all,${extras}]"
stamp=".venv/.installed-$(cat pyproject.toml | sha1sum | cut -c1-12)-${extras:-none}"
if [ ! -f "$stamp" ]; then
    .venv/bin/python -m pip install -q --upgrade pip >/dev/null
    .venv/bin/python -m pip install -q -e "$spec"
    rm -f .venv/.installed-*
    touch "$stamp"
fi
