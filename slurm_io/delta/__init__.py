"""delta stage."""
