"""What a job id given on a command line or to the service may look like. A leaf module.

Here rather than in the command layer (slurm_io.cli.app) because the service checks the same
argument (slurm_io.service.handlers) and must not import the CLI (click, its commands).
"""

from __future__ import annotations

import re

# sacct -j's forms: 123, an array task 123_4, a het component 1853+1, each with an optional
# step (.batch, .0). ASCII digits only: `\d` would take other scripts' digits.
JOBID_ARG = re.compile(r"^[0-9]+(?:_[0-9]+|\+[0-9]+)?(?:\.\w+)?\Z", re.ASCII)
