"""`jobio exporter`: the Prometheus endpoint (docs/exporter.md)."""
