"""Server metrics in the Prometheus text format, served at ``GET /metrics``.

    openenv_gym_sessions_active 3
    openenv_gym_sessions_total 17
    openenv_gym_messages_total{type="step"} 120345
    openenv_gym_errors_total{code="VALIDATION_ERROR"} 4
    openenv_gym_step_seconds{quantile="0.99"} 0.00041
    openenv_gym_step_seconds_bucket{le="0.001"} 118876

Step latency is the server's time from a decoded ``step`` message to its reply
being handed to the transport, kept in fixed log-spaced buckets (constant
memory, no locks: everything runs on the event loop); the quantiles are read
off the buckets, so they are upper bounds within one bucket's width.
"""

from __future__ import annotations

import bisect
from collections import Counter

__all__ = ["Metrics", "BUCKETS"]

#: Upper bounds (seconds) of the step-latency histogram: 10 µs to ~100 s.
BUCKETS = tuple(10 ** (exp / 4) * 1e-5 for exp in range(0, 29))


class Metrics:
    """Counters and a latency histogram for one server."""

    def __init__(self) -> None:
        self.sessions_total = 0
        self.messages: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self._buckets = [0] * (len(BUCKETS) + 1)
        self._latency_sum = 0.0
        self._latency_count = 0

    def observe_step(self, seconds: float) -> None:
        self._buckets[bisect.bisect_left(BUCKETS, seconds)] += 1
        self._latency_sum += seconds
        self._latency_count += 1

    def quantile(self, q: float) -> float | None:
        """The bucket bound below which a fraction ``q`` of step latencies fall."""
        if not self._latency_count:
            return None
        rank = q * self._latency_count
        seen = 0
        for bound, count in zip(BUCKETS + (float("inf"),), self._buckets):
            seen += count
            if seen >= rank:
                return bound
        return float("inf")

    def render(self, *, sessions_active: int, max_sessions: int, draining: bool) -> str:
        lines = [
            "# HELP openenv_gym_sessions_active Environments held by open sessions.",
            "# TYPE openenv_gym_sessions_active gauge",
            f"openenv_gym_sessions_active {sessions_active}",
            "# HELP openenv_gym_sessions_max Environments the server holds at most.",
            "# TYPE openenv_gym_sessions_max gauge",
            f"openenv_gym_sessions_max {max_sessions}",
            "# HELP openenv_gym_draining 1 while the server shuts down.",
            "# TYPE openenv_gym_draining gauge",
            f"openenv_gym_draining {int(draining)}",
            "# HELP openenv_gym_sessions_total Sessions opened since start.",
            "# TYPE openenv_gym_sessions_total counter",
            f"openenv_gym_sessions_total {self.sessions_total}",
            "# HELP openenv_gym_messages_total Client messages handled, by type.",
            "# TYPE openenv_gym_messages_total counter",
        ]
        lines += [f'openenv_gym_messages_total{{type="{k}"}} {v}' for k, v in sorted(self.messages.items())]
        lines += [
            "# HELP openenv_gym_errors_total Error frames sent, by OpenEnv error code.",
            "# TYPE openenv_gym_errors_total counter",
        ]
        lines += [f'openenv_gym_errors_total{{code="{k}"}} {v}' for k, v in sorted(self.errors.items())]
        lines += [
            "# HELP openenv_gym_step_seconds Server-side step latency.",
            "# TYPE openenv_gym_step_seconds histogram",
        ]
        cumulative = 0
        for bound, count in zip(BUCKETS, self._buckets):
            cumulative += count
            lines.append(f'openenv_gym_step_seconds_bucket{{le="{bound:.6g}"}} {cumulative}')
        lines.append(f'openenv_gym_step_seconds_bucket{{le="+Inf"}} {self._latency_count}')
        lines.append(f"openenv_gym_step_seconds_sum {self._latency_sum:.9g}")
        lines.append(f"openenv_gym_step_seconds_count {self._latency_count}")
        lines += [
            "# HELP openenv_gym_step_quantile_seconds Step latency percentiles (bucket upper bounds).",
            "# TYPE openenv_gym_step_quantile_seconds gauge",
        ]
        for q in (0.5, 0.9, 0.99):
            value = self.quantile(q)
            if value is not None:
                lines.append(f'openenv_gym_step_quantile_seconds{{quantile="{q}"}} {value:.6g}')
        return "\n".join(lines) + "\n"
