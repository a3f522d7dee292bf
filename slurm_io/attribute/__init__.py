"""Attribution stage: stored deltas + job records -> per-job I/O."""
