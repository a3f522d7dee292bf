"""Slurm job records: parse them (sacct text, hook environments), fetch them, store them.

`sacct` and `hookenv` are pure (text in, JobRecords out; node lists by slurm.nodes);
`source` runs sacct or pyslurm, `store` writes to PostgreSQL, `uids` asks the passwd database.
"""
