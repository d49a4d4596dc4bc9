"""sevro's extension protocol v1: extensions in any language, one process per method call.

The library layer only (transport, envelope, schemas, source closure, negotiation, command
file); ``sevro run`` does not call extensions yet (docs/extensions.md).
"""
