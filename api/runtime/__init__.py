"""The runtime: what runs assessments, in any process that runs them (`serve`, `worker`, `run`, `demo`).

Holds the service that creates, queues, runs, finishes and cancels assessments (`service`), everything one
process opens to run them, in order (`runtime`), the trial queue on procrastinate (`queue`) and the
`green-agent worker` loop (`worker`), progress fan-out within and across processes (`events`), the bounds on
open event streams (`streams`), `/metrics` (`metrics`), logging (`logs`), process-wide memory settings
(`memory`) and a stored assessment as a tau2 interop source (`tau2_interop`).

May import: `api.security`, `api.db` and `api.settings` (and the engine); never the web surfaces or the CLI.
"""
