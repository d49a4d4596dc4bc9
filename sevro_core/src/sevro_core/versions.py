"""``sevro --version``: sevro's version and the installed plugin distributions, from metadata.

Reads installed metadata only (no plugin is imported), so it stays as fast as ``--help``.
"""

from __future__ import annotations

import platform
from importlib import metadata

CORE_DISTRIBUTION = "sevro-core"
ENTRY_POINT_GROUP = (
    "sevro"  # sevro_core.plugin.manager.ENTRY_POINT_GROUP, not imported to stay fast
)


def core_version() -> str:
    """sevro's own version, from its installed metadata."""
    try:
        return metadata.version(CORE_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown (not installed as a distribution)"


def render_versions() -> str:
    """``sevro X`` on the first line, then each plugin distribution and Python."""
    lines = [f"sevro {core_version()}"]
    plugins: dict[str, str] = {}
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = entry.dist
        if dist is not None and dist.name != CORE_DISTRIBUTION:
            plugins[dist.name] = dist.version
    lines += [f"  {name} {version}" for name, version in sorted(plugins.items())]
    lines.append(f"  python {platform.python_version()} ({platform.python_implementation()})")
    return "\n".join(lines) + "\n"
