"""Safe data formats: bounded JSON, descriptor-level file I/O, canonical JSON, JSON Schemas."""
