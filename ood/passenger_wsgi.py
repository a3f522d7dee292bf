"""Open OnDemand's entry point for the jobio web view (docs/web.md).

OOD's per-user nginx starts this with Passenger as the logged-in user, at
/pun/sys/jobio/. It runs the slurm-io installed on the node: when Passenger's Python is
not that installation's, it re-executes itself with $SLURM_IO_PYTHON (default
/opt/slurm-io/bin/python3; set it in /etc/ood/config/apps/jobio/env). The app reads as the
user, like `jobio` on a login node: the site's /etc/slurm-io/config.toml (or
$SLURM_IO_CONFIG) names the jobio service (MUNGE) or the database.
"""

import os
import sys

PYTHON = os.environ.get("SLURM_IO_PYTHON", "/opt/slurm-io/bin/python3")
try:
    import slurm_io.web.app  # noqa: F401
except ImportError:
    # once: a PYTHON without slurm-io fails below instead of re-executing for ever
    if os.environ.get("SLURM_IO_REEXEC") != "1" and os.path.exists(PYTHON):
        os.environ["SLURM_IO_REEXEC"] = "1"
        os.execv(PYTHON, [PYTHON, *sys.argv])
    raise

from slurm_io.web.app import from_environment  # noqa: E402

application = from_environment()
