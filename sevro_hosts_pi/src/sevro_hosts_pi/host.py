"""The pi host (``sevro.host.pi``): registered once the host is built on this branch."""
