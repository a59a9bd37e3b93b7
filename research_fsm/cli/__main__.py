"""``python -m research_fsm.cli``: the CLI."""

import sys

from . import main

sys.exit(main())
