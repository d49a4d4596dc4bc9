"""sevro's sandbox backends: bubblewrap on Linux (``sevro.sandbox.bwrap``) and sandbox-exec on
macOS (``sevro.sandbox.sandbox-exec``). `docs/security.md` states what they protect.
"""
