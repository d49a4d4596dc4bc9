"""sevro's built-in graders: the output graders ``sevro.regex``, ``sevro.json``,
``sevro.schema`` and ``sevro.output``, which read only the final message, and ``sevro.shell``,
which runs an evaluator-owned command against the workspace inside the trial's sandbox.

`docs/graders.md` documents their configuration and the JavaScript regex dialect they share.
"""
