"""`python -m trainstack plan|schema` (see trainstack/cli.py)."""

import sys

from trainstack.cli import main

sys.exit(main())
