"""`python -m loadtest`: the same as the `loadtest` command."""
import sys

from .commands import main

sys.exit(main())
