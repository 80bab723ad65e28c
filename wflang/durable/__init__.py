"""Durable execution around a store: leased workers that step instances and call
handlers, the client behind ``wf start``/``signal``/``ops`` that checks every
request, and the worker's logs and metrics. The ``wf`` commands that use them are
in ``wflang.cli`` (``durable``, ``instances``, ``ops``, ``worker``)."""
