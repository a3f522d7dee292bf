"""`jobio`: the command line. Thin: every command parses flags, calls one module, prints.

One module per command family; importing one registers its commands on `main`. `main`
imports a command's module when the command is asked for (app.COMMAND_MODULES; all of them
for the help): a login node's `jobio JOBID` loads `views` alone (issue 25: start-up).
`jobio 12345` means `jobio show 12345` (like `sacct -j`): see app.JobioGroup. The console
script is entry.main, which runs a plain `jobio JOBID` without click at all (start-up again);
`main` here is the click group, imported when first named, so that entry.main does not
import click through this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from slurm_io.cli.app import main

__all__ = ["main"]


def __getattr__(name: str) -> Any:
    if name == "main":
        from slurm_io.cli.app import main

        return main
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
