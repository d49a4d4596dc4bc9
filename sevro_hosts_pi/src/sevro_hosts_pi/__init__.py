"""The pi coding agent host for sevro (``sevro.host.pi``)."""
