"""What a run keeps: the evidence store, the run-state database and run ownership."""
