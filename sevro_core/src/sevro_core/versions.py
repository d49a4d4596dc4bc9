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


def render_versions() -> str:
    """``sevro X`` on the first line, then each plugin distribution and Python."""
    try:
        core = metadata.version(CORE_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        core = "unknown (not installed as a distribution)"
    lines = [f"sevro {core}"]
    plugins: dict[str, str] = {}
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = entry.dist
        if dist is not None and dist.name != CORE_DISTRIBUTION:
            plugins[dist.name] = dist.version
    lines += [f"  {name} {version}" for name, version in sorted(plugins.items())]
    lines.append(f"  python {platform.python_version()} ({platform.python_implementation()})")
    return "\n".join(lines) + "\n"
