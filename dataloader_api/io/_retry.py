"""Which failures are retried, and how long to wait before the next attempt."""

from __future__ import annotations

import email.utils
import random
import time
from dataclasses import dataclass, field

__all__ = ["TRANSIENT_STATUSES", "RetryPolicy", "parse_retry_after"]

# Statuses a server sends for a passing condition: timeouts, throttling, overload.
TRANSIENT_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


def _check_seconds(name: str, value: object, allow_zero: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"RetryPolicy: {name} must be a number of seconds, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero) or value != value:
        allowed = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"RetryPolicy: {name} must be {allowed}, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class RetryPolicy:
    """Retries of transient failures: connection errors, timeouts, bodies cut
    short, and the statuses in ``statuses``; every other failure is raised at once.

    Attempt ``n`` (0 for the first retry) waits ``min(max_backoff, backoff *
    multiplier**n)``, less up to ``jitter`` of it at random; a ``Retry-After``
    header replaces that wait (bounded by ``max_backoff``).
    """

    max_retries: int = 5
    backoff: float = 0.1
    multiplier: float = 2.0
    max_backoff: float = 10.0
    jitter: float = 0.5
    statuses: frozenset[int] = field(default=TRANSIENT_STATUSES)

    def __post_init__(self) -> None:
        if (
            isinstance(self.max_retries, bool)
            or not isinstance(self.max_retries, int)
            or self.max_retries < 0
        ):
            raise ValueError(
                f"RetryPolicy: max_retries must be an int >= 0, got {self.max_retries!r}"
            )
        _check_seconds("backoff", self.backoff)
        _check_seconds("max_backoff", self.max_backoff)
        if _check_seconds("multiplier", self.multiplier, allow_zero=False) < 1:
            raise ValueError(f"RetryPolicy: multiplier must be >= 1, got {self.multiplier!r}")
        if not 0 <= _check_seconds("jitter", self.jitter) <= 1:
            raise ValueError(f"RetryPolicy: jitter must be in [0, 1], got {self.jitter!r}")
        statuses = frozenset(self.statuses)
        bad = [s for s in statuses if not isinstance(s, int) or not 100 <= s <= 599]
        if bad:
            raise ValueError(f"RetryPolicy: statuses must be HTTP status codes, got {bad!r}")
        object.__setattr__(self, "statuses", statuses)

    def delay(self, retry: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry number ``retry`` (0 for the first)."""
        if retry_after is not None:
            return min(self.max_backoff, max(0.0, retry_after))
        base = min(self.max_backoff, self.backoff * self.multiplier**retry)
        return base - base * self.jitter * rng.random()

    def to_dict(self) -> dict[str, object]:
        """Plain data, as a native executor takes it."""
        return {
            "max_retries": self.max_retries,
            "backoff": self.backoff,
            "multiplier": self.multiplier,
            "max_backoff": self.max_backoff,
            "jitter": self.jitter,
            "statuses": sorted(self.statuses),
        }


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
