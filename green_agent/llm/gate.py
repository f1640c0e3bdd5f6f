"""How the engine holds back from an LLM provider that says "not now" (docs/configuration.md, "Your provider
has limits"; threat model, principle 10: a provider's "not now" is not a failure).

One `EndpointGate` per endpoint (base URL, model and key) in the process, shared by every assessment and
tenant whose customer or judge uses it. Every request to the endpoint first waits for a turn at its gate,
which grants turns while all of these allow it:

* **in flight**: fewer requests out than the allowed count. That count is adaptive (AIMD): it starts at the
  operator's `max_in_flight` (unset: at 4, one more per answer until the first 429, as TCP's slow start),
  halves on a 429 and grows back by one per window of answered requests, up to `max_in_flight`. Several
  worker processes sharing one key therefore settle on its limit without talking to each other.
* **rate**: requests start at least 1 / rate seconds apart. The rate starts a little under the operator's
  `requests_per_minute` (unset: unlimited) and is adaptive too: on a 429 it drops to 70% of the rate it came
  at (our rate when that was what held requests back, else the rate being answered), climbs back fast to
  97% of that, then probes above it, slowly at first, never past the operator's rate (from a measured guess
  it climbs fast until a 429 meets our own pacing). Without a configured rate the first 429 sets one.
* **tokens**: with `tokens_per_minute`, each request spends its estimated tokens (prompt bytes / 4 plus the
  reply's `max_tokens`, corrected by the usage the answer reports) from a bucket refilled at that rate.
* **pause**: a 429 (or a 5xx naming a Retry-After) holds every request on the endpoint for as long as the
  provider said (the caller's backoff when it said nothing). The caller waits at least its own backoff on top
  (`ChatLLM`): one request's growing backoff is its own, not the endpoint's.
* **breaker**: after `breaker_failures` connection errors, timeouts or 5xx in a row, the endpoint is down:
  turns go to one probe at a time (a waiting request), spaced by a backoff that doubles up to
  `max_probe_backoff_s`, and the first answer (anything but another of those) closes it. Trials that have
  not started yet wait too (`wait_until_up`).

Turns go round-robin between assessments (the `PARTY` of the request; each assessment's requests first in,
first out), so one large assessment does not starve a small one that shares the key.

Waiting costs only time, never a retry: `ChatLLM` spends its retry budget only on failures of an endpoint that
answers. Only when an endpoint has given no usable answer for `outage_tolerance_s` (down, or nothing but 429s)
do the requests waiting for it fail, with `LLMOutage`: the trial is an excluded infrastructure error, which
`retry` can run again later. Probes go on meanwhile, so the endpoint is found again when it is back.

Everything here runs on the event loop and costs a few dictionary and deque operations per request.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import math
import re
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Literal, TypeVar
from urllib.parse import urlparse

from green_agent.core.errors import LLMOutage

PARTY: ContextVar[str] = ContextVar("llm_party", default="")
"""Whose request this is (the engine sets the assessment's id around each trial): the gate's turns go
round-robin between parties. A context variable because the judge and the customer's LLM client are shared
by every assessment of the engine: their requests carry no other trace of whom they serve."""

MAX_PROVIDER_WAIT_S = 86_400.0
"""Longest wait taken from a provider's header: a day (a longer one is read as a day; the outage tolerance
ends the waiting long before)."""
WINDOW_DECREASE = 0.5
SLOW_START_WINDOW = 4.0
"""Without a configured `max_in_flight`, an endpoint starts with this many requests in flight and one more
per answer that the window held back (doubling per round trip) until its first 429: a run's first burst (32
trials asking at once) then meets an unknown cap with a few requests, not all of them. An unlimited endpoint
is at 32 in flight after three round trips."""
RATE_DECREASE = 0.7
RATE_MARGIN = 0.98
"""A configured rate is aimed at 2% under: our start times and the provider's count differ by milliseconds
(event-loop lag, connection set-up), and one request too many in a window costs a whole Retry-After."""
RATE_RECOVER = 0.05
RATE_PLATEAU = 0.97
RATE_PROBE = 0.0002
PROBE_ACCELERATION = 200
"""After a 429 the rate falls to 70% of the rate it happened at (the ceiling), climbs back by 5% of the
ceiling per answered request to 97% of it, then probes above: the k-th answer there adds
0.02% x (1 + k / 200) of the ceiling (+3% after ~115 answers, 23 s at 5 requests a second; twice the
ceiling after ~1,230 answers). It comes back fast, stays just under the rate that was one too many, since
each 429 costs every request on the endpoint a pause of the provider's Retry-After, and the longer no 429
comes the faster it finds out whether the provider now allows more (a key's other user stopped)."""
RATE_SAMPLE_S = 10.0
"""The rate that was being answered, just before a 429, is measured over this many seconds at most, minus
the last pause (which would read as a lower limit)."""
HELD_LOOKBACK_S = 1.0
"""A 429 says which limit the provider met by what held requests back at the gate from this long before the
request went out: our rate (the ceiling is then our rate, and the rate stays just under it; the in-flight
window is not cut), the window (it is cut), or nothing (both are cut; the ceiling is the rate that was
being answered, a guess from which the rate climbs by RATE_GUESS_CLIMB per answer until our pacing meets a
429)."""
RATE_GUESS_CLIMB = 1.03
"""From a guessed ceiling the rate grows 3% per answer: it reaches a limit twice the guess in 24 answers,
and overshoots it by a few percent, which the following 429s at our pacing take back."""
MIN_RATE = 1.0 / 60
"""The adaptive rate never drops below one request a minute."""
RECENT_STARTS = 512
"""Start times of answered requests kept for measuring the answered rate (a bounded deque)."""
MAX_GATES = 256
"""Gates kept by one registry; only idle ones are ever dropped (endpoints come from the operator's settings,
so a process normally has a handful)."""

State = Literal["ok", "rate_limited", "down"]


@dataclass(frozen=True)
class EndpointLimits:
    """The operator's limits of one endpoint (LLMEndpoint's fields); None = unlimited."""

    max_in_flight: int | None = None
    requests_per_minute: float | None = None
    tokens_per_minute: int | None = None

    def strictest(self, other: EndpointLimits) -> EndpointLimits:
        """Two configured models that share one key and model (a customer and a judge) share one gate: the
        stricter of each limit holds."""
        return EndpointLimits(
            max_in_flight=_lower(self.max_in_flight, other.max_in_flight),
            requests_per_minute=_lower(self.requests_per_minute, other.requests_per_minute),
            tokens_per_minute=_lower(self.tokens_per_minute, other.tokens_per_minute),
        )


N = TypeVar("N", int, float)


def _lower(a: N | None, b: N | None) -> N | None:
    return b if a is None else a if b is None else min(a, b)


@dataclass(frozen=True)
class GatePolicy:
    """The operator's patience with providers (EngineSettings: llm_outage_tolerance_s, llm_breaker_failures,
    llm_retry_backoff_s)."""

    outage_tolerance_s: float = 900.0
    breaker_failures: int = 3
    probe_backoff_s: float = 1.0
    max_probe_backoff_s: float = 30.0


@dataclass(frozen=True)
class EndpointStatus:
    """What a gate says about its endpoint, for progress displays and /metrics."""

    endpoint: str
    state: State
    since: datetime | None
    """When the endpoint stopped answering usably (first failure or 429 of the streak); None when ok."""
    waiting: int
    in_flight: int
    allowed_in_flight: float | None
    """The adaptive in-flight count (None: unlimited so far)."""
    requests_per_minute: float | None
    """The adaptive rate (None: unlimited so far)."""
    problem: str = ""

    def describe(self) -> str:
        """ "waiting for gpt-4.1 at api.openai.com: rate limited" / "...: down since 14:02:11"; "" when ok."""
        if self.state == "ok":
            return ""
        if self.state == "rate_limited":
            return f"waiting for {self.endpoint}: rate limited"
        since = self.since.astimezone().strftime("%H:%M:%S") if self.since else "a moment ago"
        return f"waiting for {self.endpoint}: down since {since}"


@dataclass(frozen=True)
class GateEvent:
    """One thing a gate observed: a 429 answer, a wait that ended (seconds), or a change of state."""

    endpoint: str
    kind: Literal["rate_limited", "waited", "state"]
    seconds: float = 0.0
    state: State = "ok"


observers: list[Callable[[GateEvent], None]] = []
"""Called with every `GateEvent` (the API's metrics register here); the engine keeps no counters."""


def _observe(event: GateEvent) -> None:
    for observer in observers:
        observer(event)


# -- what a provider says about when to come back -----------------------------------------------------------

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def parse_duration(text: str) -> float | None:
    """OpenAI's x-ratelimit-reset-* durations ("20ms", "1s", "1.5s", "6m0s", "1h2m3s") in seconds, or None
    when `text` is not one (a bare number counts as seconds)."""
    text = text.strip()
    if not text or len(text) > 40:
        return None
    with contextlib.suppress(ValueError):
        return float(text)
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + unit for n, unit in parts) != text:
        return None
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(number) * scale[unit] for number, unit in parts)


def provider_wait(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """How long the provider asked us to wait, from its headers, in seconds (None: it did not say).

    In order: `retry-after-ms` (OpenAI's), `Retry-After` (seconds or an HTTP date, RFC 9110), then the reset
    time of the limit that ran out (`x-ratelimit-reset-requests` when `x-ratelimit-remaining-requests` is 0,
    `-tokens` likewise; the longer of the two when neither says). Unreadable values are ignored; the result
    is within [0, MAX_PROVIDER_WAIT_S]."""
    lower = {k.lower(): v for k, v in headers.items()}

    def bounded(seconds: float) -> float | None:
        if math.isnan(seconds):
            return None
        return min(max(seconds, 0.0), MAX_PROVIDER_WAIT_S)

    if (ms := lower.get("retry-after-ms")) is not None:
        with contextlib.suppress(ValueError):
            return bounded(float(ms) / 1000)
    if (after := lower.get("retry-after")) is not None:
        with contextlib.suppress(ValueError):
            return bounded(float(after))
        with contextlib.suppress(TypeError, ValueError, IndexError, OverflowError):
            when = parsedate_to_datetime(after)
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            return bounded((when - (now or datetime.now(UTC))).total_seconds())
    resets = {}
    for limit in ("requests", "tokens"):
        raw = lower.get(f"x-ratelimit-reset-{limit}")
        seconds = parse_duration(raw) if raw is not None else None
        if seconds is not None:
            resets[limit] = seconds
    exhausted = [
        resets[limit] for limit in resets if lower.get(f"x-ratelimit-remaining-{limit}", "").strip() == "0"
    ]
    chosen = exhausted or list(resets.values())
    return bounded(max(chosen)) if chosen else None


# -- the gate ---------------------------------------------------------------------------------------------


@dataclass
class _Waiter:
    future: asyncio.Future[Turn]
    tokens: int
    since: float
    first: bool
    """The first attempt of its call: only such a request may probe an endpoint past the tolerance (a call
    that was already waiting has waited its share)."""


@dataclass
class Turn:
    """A granted request; tell the gate how it went (`answered`, `rate_limited`, `failed`). A turn left
    without a verdict (cancelled, or an error that says nothing about the endpoint) changes nothing."""

    gate: EndpointGate
    started: float
    tokens: int
    probe: bool
    in_flight_at_start: int
    rate_at_start: float
    """The gate's rate when this request went out: a 429 to it says that rate was one too many (the rate
    may have climbed further while it was out)."""
    done: bool = False

    def answered(self, tokens_used: int | None = None) -> None:
        """The endpoint answered (whatever the answer said): it is up and not rate limiting this request."""
        if not self.done:
            self.done = True
            self.gate._answered(self, tokens_used)

    def rate_limited(self, wait_s: float) -> None:
        """A 429 (or a 5xx with Retry-After): hold the endpoint for `wait_s`."""
        if not self.done:
            self.done = True
            self.gate._rate_limited(self, wait_s)

    def failed(self, problem: str) -> None:
        """No answer: a connection error, a timeout or a 5xx (counts toward the breaker)."""
        if not self.done:
            self.done = True
            self.gate._failed(self, problem)

    def release(self) -> None:
        if not self.done:
            self.done = True
            self.gate._release(self)


class EndpointGate:
    """Turns at one endpoint: see the module docstring."""

    def __init__(
        self,
        name: str,
        limits: EndpointLimits | None = None,
        policy: GatePolicy | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.policy = policy or GatePolicy()
        self._clock = clock
        self.limits = EndpointLimits()
        self._waiting: OrderedDict[str, deque[_Waiter]] = OrderedDict()
        self._up_waiters: deque[asyncio.Future[None]] = deque()
        self.in_flight = 0
        # The endpoint has answered in this process (a completion or `ChatLLM.check`): no answer from it now
        # is an outage to wait out, not a wrong URL.
        self.answered_once = False
        self.window = SLOW_START_WINDOW
        self.rate = math.inf  # requests per second
        self._ceiling = math.inf  # the rate the last 429 came at
        self._probing = 0  # answers since the rate came back to RATE_PLATEAU of the ceiling
        self._ceiling_known = False  # the ceiling is our pacing rate that met a 429, not a measured guess
        self._last_start = -math.inf
        self._rate_held_at = self._window_held_at = -math.inf  # when each last held a request back
        self._tokens = 0.0
        self._tokens_at = clock()
        self._paused_from = self._paused_until = -math.inf
        self._last_decrease = -math.inf
        self._recent: deque[float] = deque(maxlen=RECENT_STARTS)
        self._failures = 0
        self._unanswered_since: float | None = None
        self._unanswered_wall: datetime | None = None
        self._rate_limited_now = False
        self._down = False
        self._probe_out = False
        self._next_probe = -math.inf
        self._probe_backoff = self.policy.probe_backoff_s
        self._starter_at = -math.inf
        self._problem = ""
        self._state: State = "ok"
        self._timer: asyncio.TimerHandle | None = None
        self.configure(limits or EndpointLimits())

    def configure(self, limits: EndpointLimits) -> None:
        """Apply `limits` (the stricter of each, when the gate has limits already)."""
        merged = self.limits.strictest(limits)
        self.limits = merged
        if merged.max_in_flight is not None:
            told = float(merged.max_in_flight)  # the operator knows the cap: no need to find it
            self.window = told if self._slow_start else min(self.window, told)
        if merged.requests_per_minute is not None:
            self.rate = min(self.rate, self._rate_cap())

    @property
    def _slow_start(self) -> bool:
        """Until the first 429: the window grows by one per answer, not per window of answers."""
        return math.isinf(self._last_decrease)

    # -- what callers use ---------------------------------------------------------------------------------

    @property
    def down(self) -> bool:
        return self._down

    @property
    def gave_up(self) -> bool:
        """The endpoint has been unavailable past the outage tolerance: its waiting requests fail."""
        return self._expired(self._clock())

    @property
    def counts_tokens(self) -> bool:
        return self.limits.tokens_per_minute is not None

    @contextlib.asynccontextmanager
    async def request(self, tokens: int = 0, *, first: bool = True) -> AsyncIterator[Turn]:
        """Wait for a turn; raises `LLMOutage` once the endpoint has not answered for the tolerance (then only
        a `first` attempt may still go through, as the probe, when one is due)."""
        turn = await self._acquire(tokens, first)
        try:
            yield turn
        finally:
            turn.release()

    async def wait_until_up(self) -> None:
        """Return once the endpoint is not down (or has been down past the tolerance: the trial then fails at
        its first request, as an excluded infrastructure error). While it is down and nobody is probing it,
        one waiting trial at a time is let through, so that someone probes."""
        if not self._down or self._expired(self._clock()):
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._up_waiters.append(future)
        self._dispatch()
        try:
            await future
        finally:
            if not future.done():
                future.cancel()

    def status(self) -> EndpointStatus:
        return EndpointStatus(
            endpoint=self.name,
            state=self._state,
            since=self._unanswered_wall if self._state != "ok" else None,
            waiting=sum(len(q) for q in self._waiting.values()) + len(self._up_waiters),
            in_flight=self.in_flight,
            allowed_in_flight=None if math.isinf(self.window) else round(self.window, 2),
            requests_per_minute=None if math.isinf(self.rate) else round(self.rate * 60, 2),
            problem=self._problem if self._state != "ok" else "",
        )

    @property
    def idle(self) -> bool:
        return not self.in_flight and not self._waiting and not self._up_waiters

    # -- granting -----------------------------------------------------------------------------------------

    async def _acquire(self, tokens: int, first: bool) -> Turn:
        now = self._clock()
        party = PARTY.get()
        future: asyncio.Future[Turn] = asyncio.get_running_loop().create_future()
        waiter = _Waiter(future, tokens, now, first)
        self._waiting.setdefault(party, deque()).append(waiter)
        self._dispatch()
        try:
            turn = await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled() and future.exception() is None:
                future.result().release()  # granted, then cancelled before it could be used
            else:
                future.cancel()
                self._forget(party, waiter)
            raise
        finally:
            self._prune(party)
        waited = self._clock() - waiter.since
        if waited > 0.001:
            _observe(GateEvent(self.name, "waited", seconds=waited))
        return turn

    def _forget(self, party: str, waiter: _Waiter) -> None:
        queue = self._waiting.get(party)
        if queue is not None:
            with contextlib.suppress(ValueError):
                queue.remove(waiter)
        self._prune(party)
        self._dispatch()

    def _prune(self, party: str) -> None:
        queue = self._waiting.get(party)
        if queue is not None and not queue:
            del self._waiting[party]

    def _next_waiter(self) -> _Waiter | None:
        """The first live waiter of the party whose turn it is (round-robin); that party moves to the end."""
        for party in list(self._waiting):
            queue = self._waiting[party]
            while queue and queue[0].future.done():
                queue.popleft()
            if not queue:
                del self._waiting[party]
                continue
            waiter = queue.popleft()
            if queue:
                self._waiting.move_to_end(party)
            else:
                del self._waiting[party]  # so that `_has_waiters` is true only while someone waits
            return waiter
        return None

    def _has_waiters(self) -> bool:
        # The queues hold live waiters only: a cancelled one is removed at once (`_forget`), a granted one is
        # popped (`_next_waiter`), a failed one dropped (`_fail_waiters`).
        return bool(self._waiting)

    def _grant(self, now: float, *, probe: bool) -> bool:
        # (the window is at least 1 and may be fractional while it grows: 2.5 allows 2 in flight, 3 once it
        # reaches 3)
        waiter = self._next_waiter()
        if waiter is None:
            return False
        self.in_flight += 1
        self._last_start = now
        if self.counts_tokens:
            self._tokens -= waiter.tokens
        waiter.future.set_result(Turn(self, now, waiter.tokens, probe, self.in_flight, self.rate))
        return True

    def _dispatch(self) -> None:
        """Grant every turn the limits allow now; schedule the next look when time is what holds them."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        now = self._clock()
        wake_at = math.inf
        expired = self._expired(now)
        if expired:
            self._fail_waiters(now)
        while self._has_waiters():
            if expired and self.in_flight:
                break  # past the tolerance, one request at a time finds out whether it is back
            if now < self._paused_until:
                wake_at = self._paused_until
                break
            if self._down:
                if self._probe_out:
                    break
                if now < self._next_probe:
                    wake_at = self._next_probe
                    break
                self._probe_out = self._grant(now, probe=True)
                break
            if self.in_flight + 1 > self.window:
                self._window_held_at = now
                break  # an answer frees a place
            next_start = self._last_start + 1 / self.rate if not math.isinf(self.rate) else -math.inf
            if now < next_start:
                self._rate_held_at = now
                wake_at = next_start
                break
            if self.counts_tokens:
                self._refill(now)
                if self._tokens < 0:
                    per_s = (self.limits.tokens_per_minute or 1) / 60
                    wake_at = now + -self._tokens / per_s
                    break
            self._grant(now, probe=False)
        wake_at = min(wake_at, self._release_starters(now))
        if self._unanswered_since is not None and (self._has_waiters() or self._up_waiters):
            deadline = self._unanswered_since + self.policy.outage_tolerance_s
            if deadline > now:
                wake_at = min(wake_at, deadline)
        if wake_at < math.inf:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_at(loop.time() + max(0.0, wake_at - now), self._dispatch)

    def _release_starters(self, now: float) -> float:
        """Trials waiting to start: all go once the endpoint is up (or down past the tolerance); while it is
        down, one at a time when nobody is waiting to probe, so that a probe happens. Returns when to look
        again (inf: an answer or a new request will)."""
        if not self._up_waiters:
            return math.inf
        if not self._down or self._expired(now):
            while self._up_waiters:
                future = self._up_waiters.popleft()
                if not future.done():
                    future.set_result(None)
            return math.inf
        if self._probe_out or self._has_waiters():
            return math.inf
        if now < self._starter_at + self._probe_backoff:
            return self._starter_at + self._probe_backoff
        while self._up_waiters:
            future = self._up_waiters.popleft()
            if not future.done():
                future.set_result(None)
                self._starter_at = now
                break
        return math.inf

    def _refill(self, now: float) -> None:
        per_s = (self.limits.tokens_per_minute or 0) / 60
        self._tokens = min(per_s, self._tokens + (now - self._tokens_at) * per_s)
        self._tokens_at = now

    # -- the outage tolerance -----------------------------------------------------------------------------

    def _expired(self, now: float) -> bool:
        """The endpoint is down or only rate limiting, and has given no usable answer for the tolerance."""
        return (
            self._unanswered_since is not None
            and (self._down or self._rate_limited_now)
            and now - self._unanswered_since >= self.policy.outage_tolerance_s
        )

    def _fail_waiters(self, now: float) -> None:
        """Past the tolerance, waiting requests fail, except first attempts of their calls while a probe is
        out or due (nothing in flight, and the probe backoff or the provider's pause over): those wait for
        its verdict, so that the endpoint is found again when it is back, and a new assessment then runs."""
        probing = self._probe_out or (not self._down and self.in_flight > 0)
        due = not self.in_flight and now >= (self._next_probe if self._down else self._paused_until)
        error = self._outage_error()
        for party, queue in list(self._waiting.items()):
            for waiter in queue:
                if not waiter.future.done() and not ((probing or due) and waiter.first):
                    waiter.future.set_exception(error)
            live = deque(w for w in queue if not w.future.done())
            if live:
                self._waiting[party] = live
            else:
                del self._waiting[party]

    def _outage_error(self) -> LLMOutage:
        since = self._unanswered_wall.astimezone().strftime("%H:%M:%S") if self._unanswered_wall else "?"
        what = "down" if self._down else "rate limiting every request"
        return LLMOutage(
            f"LLM {self.name} has been {what} since {since} ({self.policy.outage_tolerance_s:g} s, the "
            f"operator's GREEN_AGENT_LLM_OUTAGE_TOLERANCE_S){': ' + self._problem if self._problem else ''}; "
            "the trial can be run again with `green-agent retry` once the endpoint is back"
        )

    # -- verdicts -----------------------------------------------------------------------------------------

    def _release(self, turn: Turn) -> None:
        self.in_flight -= 1
        if turn.probe:
            self._probe_out = False
        self._dispatch()

    def _answered(self, turn: Turn, tokens_used: int | None) -> None:
        self.answered_once = True
        self._failures = 0
        self._unanswered_since = self._unanswered_wall = None
        self._rate_limited_now = False
        self._problem = ""
        if self._down:
            self._down = False
            self._probe_backoff = self.policy.probe_backoff_s
        self._recent.append(turn.started)
        if self.counts_tokens and tokens_used is not None:
            self._tokens += turn.tokens - tokens_used
        cap = float(self.limits.max_in_flight) if self.limits.max_in_flight is not None else math.inf
        if self.window < cap and turn.in_flight_at_start >= int(self.window):
            self.window = min(cap, self.window + (1 if self._slow_start else 1 / self.window))
        if not math.isinf(self.rate) and not math.isinf(self._ceiling):
            plateau = RATE_PLATEAU * self._ceiling
            if not self._ceiling_known:  # a guessed ceiling: climb until our pacing finds the limit
                self.rate *= RATE_GUESS_CLIMB
            elif self.rate < plateau:  # back fast, to just under the rate that was one too many
                self.rate = min(plateau, self.rate + RATE_RECOVER * self._ceiling)
            else:
                self._probing += 1
                self.rate += RATE_PROBE * (1 + self._probing / PROBE_ACCELERATION) * self._ceiling
            self.rate = min(self._rate_cap(), self.rate)
        self._set_state("ok")
        self._release(turn)

    def _rate_limited(self, turn: Turn, wait_s: float) -> None:
        now = self._clock()
        _observe(GateEvent(self.name, "rate_limited"))
        self._mark_unanswered(now)
        self._rate_limited_now = True
        self._failures = 0
        if self._down:  # it answered: up again, if only to say "not now"
            self._down = False
            self._probe_backoff = self.policy.probe_backoff_s
        if turn.started >= self._last_decrease:  # once per congestion: not again for requests sent before it
            self._last_decrease = now
            # What held requests back while this one went out says which limit the provider met.
            since = turn.started - HELD_LOOKBACK_S
            paced = self._rate_held_at >= since
            if self._window_held_at >= since or not paced:
                # From what the provider is holding now (this request included), not from the allowance.
                self.window = max(1.0, min(self.window, float(self.in_flight)) * WINDOW_DECREASE)
            answered = self._answered_rate(now)
            if paced and not math.isinf(turn.rate_at_start):
                # We were sending at our rate, and it was one too many: the limit is just under it.
                self._ceiling, self._ceiling_known = turn.rate_at_start, True
            elif answered is not None:
                # Our rate did not hold anything back (the window did, or too few requests, or a key
                # shared with others): the provider's limit is near what it answered, a guess.
                self._ceiling, self._ceiling_known = min(self.rate, answered), False
            if not math.isinf(self._ceiling):
                self.rate = max(MIN_RATE, self._ceiling * RATE_DECREASE)
                self._probing = 0
        if now >= self._paused_until:
            self._paused_from = now
        self._paused_until = max(self._paused_until, now + max(0.0, wait_s))
        self._problem = "HTTP 429 (rate limited)"
        self._set_state("rate_limited")
        self._release(turn)

    def _rate_cap(self) -> float:
        """The operator's rate (a little under it: RATE_MARGIN), in requests per second; inf when unset."""
        configured = self.limits.requests_per_minute
        return configured / 60 * RATE_MARGIN if configured is not None else math.inf

    def _answered_rate(self, now: float) -> float | None:
        """Requests per second answered just before now (over RATE_SAMPLE_S at most, not counting the time
        of the last pause, when nothing could start); None when too few were answered to tell (the in-flight
        window and the pause then do the holding back)."""
        recent = [t for t in self._recent if t >= now - RATE_SAMPLE_S]
        if len(recent) < 2:
            return None
        paused = max(0.0, min(now, self._paused_until) - max(recent[0], self._paused_from))
        return len(recent) / max(now - recent[0] - paused, 1.0)

    def _failed(self, turn: Turn, problem: str) -> None:
        now = self._clock()
        self._mark_unanswered(now)
        self._failures += 1
        self._problem = problem
        if turn.probe or (not self._down and self._failures >= self.policy.breaker_failures):
            if not self._down:
                self._probe_backoff = self.policy.probe_backoff_s
            self._down = True
            self._next_probe = now + self._probe_backoff
            self._probe_backoff = min(self.policy.max_probe_backoff_s, max(self._probe_backoff * 2, 0.001))
            self._set_state("down")
        self._release(turn)

    def _mark_unanswered(self, now: float) -> None:
        if self._unanswered_since is None:
            self._unanswered_since = now
            self._unanswered_wall = datetime.now(UTC)

    def _set_state(self, state: State) -> None:
        if state != self._state:
            self._state = state
            _observe(GateEvent(self.name, "state", state=state))


# -- one gate per endpoint --------------------------------------------------------------------------------


def endpoint_label(model: str, base_url: str | None) -> str:
    """How an endpoint is named to users and in metrics: the model and the host (never a path, query or
    userinfo, which may hold secrets)."""
    host = (urlparse(base_url).hostname or base_url) if base_url else "api.openai.com"
    port = urlparse(base_url).port if base_url else None
    return f"{model} at {host}{f':{port}' if port else ''}"


@dataclass
class GateRegistry:
    """The gates of one engine (one per endpoint per process: the service runs one engine per process),
    keyed by base URL, model and a hash of the key."""

    policy: GatePolicy = field(default_factory=GatePolicy)
    max_gates: int = MAX_GATES
    _gates: OrderedDict[tuple[str, str, str], EndpointGate] = field(default_factory=OrderedDict)

    def gate(
        self, model: str, base_url: str | None, api_key: str | None, limits: EndpointLimits
    ) -> EndpointGate:
        key_hash = hashlib.sha256((api_key or "").encode()).hexdigest()[:16]
        key = (base_url or "", model, key_hash)
        gate = self._gates.get(key)
        if gate is None:
            gate = self._gates[key] = EndpointGate(endpoint_label(model, base_url), limits, self.policy)
            self._shrink()
        else:
            gate.configure(limits)
            self._gates.move_to_end(key)
        return gate

    def statuses(self) -> list[EndpointStatus]:
        return [gate.status() for gate in self._gates.values()]

    def _shrink(self) -> None:
        for key in list(self._gates):
            if len(self._gates) <= self.max_gates:
                return
            if self._gates[key].idle:
                del self._gates[key]
