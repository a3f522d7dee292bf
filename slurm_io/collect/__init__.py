"""collect stage."""
