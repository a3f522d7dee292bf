"""LASSi risk and ops metrics (docs/views.md)."""
