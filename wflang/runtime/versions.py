"""The range of a workflow's version, which the checker (WF306) and every store's deploy
hold a table to: in a module that imports nothing, since the checker reads it and a
check imports no more of the runtime than it must (``tests/test_cli_package.py``).
"""

from __future__ import annotations

#: The highest version a workflow may have: what every store's version column holds
#: (a 32-bit signed integer on PostgreSQL). Versions run from 1 to this.
MAX_VERSION = 2**31 - 1
