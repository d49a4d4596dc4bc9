"""The Claude Code host for sevro (``sevro.host.claude``)."""
