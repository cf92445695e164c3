"""`python -m holodesk.client` is the `holodesk` command."""

import sys

from holodesk.client.cli import main

sys.exit(main())
