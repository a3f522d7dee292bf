"""Slurm job records: parse them (sacct text, hook environments), fetch them, store them.

`sacct`, `nodes` and `hookenv` are pure (text in, JobRecords out); `source` runs sacct or
pyslurm, `store` writes to PostgreSQL, `uids` asks the passwd database.
"""
