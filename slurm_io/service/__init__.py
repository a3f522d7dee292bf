"""`jobio serve`: the read service on the database host (docs/service.md, docs/deploy.md)."""
