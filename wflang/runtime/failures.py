"""The errors the runtime itself fails a service call with, whatever its service declares.

A workflow may route them (``on NoHandler -> …``) like any declared error; the
checker knows them too (``wf check`` never says a service cannot raise one), so
they live here, in a module that imports nothing.
"""

from __future__ import annotations

#: No handler is registered for the service where the call runs.
NO_HANDLER = "NoHandler"
#: The handler's result does not fit the service's declared result (a bug in the handler).
INVALID_RESULT = "InvalidResult"
#: An at-most-once call whose worker stopped after starting it: it is not run again,
#: and its effect may have happened.
INTERRUPTED = "Interrupted"
#: The durable worker failed around the handler (not the handler itself).
WORKER_ERROR = "WorkerError"

RUNTIME_ERRORS = frozenset({NO_HANDLER, INVALID_RESULT, INTERRUPTED, WORKER_ERROR})
