"""Who runs when: the fair per-process trial slots (`slots`) and the per-agent concurrency caps
(`keyed_limits`)."""
