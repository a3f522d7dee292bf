"""Where slurm-io keeps its state and finds its SQL migrations and report templates.

The same code runs from a source checkout (editable install: `sql/` and `templates/` sit next
to the `slurm_io` package) and from an installed wheel (they are installed as data files under
`<sys.prefix>/share/slurm-io/`), so lookups try both. Environment overrides exist so that tests
and unusual installs never need code changes.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

STATE_DIR_ENV = "SLURM_IO_STATE_DIR"
SQL_DIR_ENV = "SLURM_IO_SQL_DIR"
TEMPLATES_DIR_ENV = "SLURM_IO_TEMPLATES_DIR"

# The state directory of root must be enterable by the unprivileged account that runs the
# embedded PostgreSQL (initdb/postgres refuse to run as root). /var/lib is 0755 on every
# distribution, whereas /root is 0700: putting root's state under /root would force a chmod.
ROOT_STATE_DIR = Path("/var/lib/slurm-io")


def default_state_dir() -> Path:
    """The directory for the embedded database, the spool and collector state.

    Order: $SLURM_IO_STATE_DIR; /var/lib/slurm-io for root (system service, and a path the
    embedded PostgreSQL's account can traverse); else the XDG state dir of the user.
    """
    env = os.environ.get(STATE_DIR_ENV)
    if env:
        return Path(env).expanduser().absolute()
    if os.geteuid() == 0:
        return ROOT_STATE_DIR
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "state"
    return base / "slurm-io"


def _repo_root() -> Path:
    """Parent of the `slurm_io` package: the source tree root for editable installs."""
    return Path(__file__).resolve().parent.parent


def _find_data_dir(name: str, env: str) -> Path:
    """Locate a top-level data folder (`sql`, `templates`) of the project.

    The source tree wins over an installed copy so that a developer's edits are used; it is
    recognised by `pyproject.toml` beside the folder, because site-packages may well hold an
    unrelated top-level `sql` or `templates` directory.
    """
    override = os.environ.get(env)
    if override:
        path = Path(override).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(f"${env} points to {path}, which is not a directory")
        return path
    root = _repo_root()
    candidates = []
    if (root / "pyproject.toml").is_file():
        candidates.append(root / name)
    candidates.append(Path(sys.prefix) / "share" / "slurm-io" / name)
    for path in candidates:
        if path.is_dir():
            return path
    tried = ", ".join(str(p) for p in candidates)
    raise FileNotFoundError(f"slurm-io {name}/ directory not found (tried {tried}; set ${env})")


def sql_dir() -> Path:
    """Directory holding the versioned migrations `NNNN_*.sql`."""
    return _find_data_dir("sql", SQL_DIR_ENV)


def templates_dir() -> Path:
    """Directory holding the report templates."""
    return _find_data_dir("templates", TEMPLATES_DIR_ENV)
