"""The command line: `green-agent` (the console script is `api.cli:main`; `python -m api.cli` runs it too).

Holds the entry point that builds the command and dispatches the verbs (`main`) and one module per group of
verbs: `run` and `demo` (`run`), `export`, `submission` and `rescore` (`interop`), `reference-agent`
(`reference`), `local-llm` and `demo --local-llm` (`local_llm`); expected operational failures turned into one
line and an exit code (`errors`), and the exit codes themselves (`exit_codes`). A verb module parses options
and calls the rooms below.

May import: every other room (`api.web`, `api.runtime`, `api.security`, `api.db`) and `api.settings`; nothing
imports it.
"""

from api.cli.main import main

__all__ = ["main"]
