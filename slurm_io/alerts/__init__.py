"""I/O alerts on running jobs (`jobio alerts`, docs/alerts.md)."""
