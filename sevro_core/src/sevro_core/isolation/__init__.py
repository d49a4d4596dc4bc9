"""Isolation: the sandbox in effect, protected paths, process control and the sandbox doctor."""
