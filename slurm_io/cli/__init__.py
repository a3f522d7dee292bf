"""`jobio`: the command line. Thin: every command parses flags, calls one module, prints.

One module per command family; importing them registers their commands on `main`.
`jobio 12345` means `jobio show 12345` (like `sacct -j`): see app.JobioGroup.
"""

from slurm_io.cli import (  # noqa: F401  (registers commands)
    admin,
    alerts,
    collect,
    db,
    exporter,
    jobs,
    mail,
    serve,
    views,
)
from slurm_io.cli.app import main

__all__ = ["main"]
