"""`python -m slurm_io.cli` runs `jobio` (the console script's entry.main)."""

from slurm_io.cli.entry import main

main()
