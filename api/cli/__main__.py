"""`python -m api.cli`: the `green-agent` command."""

import sys

from api.cli.main import main

sys.exit(main())
