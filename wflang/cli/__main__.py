"""``python -m wflang.cli``: the ``wf`` command."""

import sys

from wflang.cli import main

sys.exit(main())
