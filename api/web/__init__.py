"""The web surfaces: the FastAPI app and the doors it opens (REST, A2A, the browser UI).

Holds the app and its lifespan (`app`), the route dependencies (`deps`), the REST schemas (`schemas`), the
request body limit and short error bodies (`request_limits`), strict JSON for outside input (`strict_json`),
one router per resource (`routes/`), the A2A door (`a2a/`) and the web UI under /ui (`ui/`).

May import: `api.runtime`, `api.security`, `api.db` and `api.settings` (and the engine); never the CLI.
"""
