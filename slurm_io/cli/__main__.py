"""`python -m slurm_io.cli` runs `jobio`."""

from slurm_io.cli import main

main()
