"""Security: who is asking and how much they may ask for.

Holds API keys to principals and the authentication middleware in front of every door (`auth`), A2A task
ownership per tenant (`tenancy`) and the admission quotas (`quotas`).

May import: `api.db` and `api.settings` (and the engine); never the runtime, the web surfaces or the CLI.
"""
