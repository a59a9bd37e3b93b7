"""``python -m research_fsm``: the CLI."""

import sys

from .cli import main

sys.exit(main())
