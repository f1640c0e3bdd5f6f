"""Trial seeds, drawn as upstream tau2 draws them so that seeded LLM runs are comparable."""

from __future__ import annotations

import random

SEED_RANGE_MAX = 1_000_000


def trial_seeds(seed: int, trials: int) -> list[int]:
    """Seeds of trials 0..trials-1: `random.seed(seed)` then one `randint(0, 10**6)` per trial.

    A private `random.Random` gives the same sequence as seeding the global generator, without touching it.
    """
    rng = random.Random(seed)
    return [rng.randint(0, SEED_RANGE_MAX) for _ in range(trials)]
