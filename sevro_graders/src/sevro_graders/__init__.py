"""sevro's output graders: ``sevro.regex``, ``sevro.json``, ``sevro.schema`` and ``sevro.output``.

They read only the trial's final message; `docs/graders.md` documents their configuration and
the JavaScript regex dialect they share.
"""
