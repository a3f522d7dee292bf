"""The login-node side of `jobio`: commands answered by the jobio service (slurm_io/service)
instead of the database. Kept light: no psycopg, no jinja2; the standard library's HTTP."""
