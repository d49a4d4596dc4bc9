"""sevro on a Ray cluster: the ``sevro.executor.ray`` executor (``--executor ray``)."""
