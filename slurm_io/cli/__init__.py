"""`jobio`: the command line. Thin: every command parses flags, calls one module, prints.

One module per command family; importing one registers its commands on `main`. `main`
imports a command's module when the command is asked for (app.COMMAND_MODULES; all of them
for the help): a login node's `jobio JOBID` loads `views` alone (issue 25: start-up).
`jobio 12345` means `jobio show 12345` (like `sacct -j`): see app.JobioGroup.
"""

from slurm_io.cli.app import main

__all__ = ["main"]
