"""A handler that tells the test it started, then waits for the test to release it.

Both signals travel through named pipes (``$WF_TEST_STARTED``, ``$WF_TEST_RELEASE``):
blocking reads and writes, no sleeping on either side.
"""

from __future__ import annotations

import os

from wflang.runtime.engine import handler
from wflang.runtime.ir import Value


@handler("slow.call")
def call(id: str) -> dict[str, Value]:
    with open(os.environ["WF_TEST_STARTED"], "w") as started:
        started.write(id + "\n")
    with open(os.environ["WF_TEST_RELEASE"]) as release:
        release.readline()
    return {"done": True}
