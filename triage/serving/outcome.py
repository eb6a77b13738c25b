"""What one simulation leaves: per request its first token, completion and longest gap; every token gap in a
fixed-memory sketch; the engine's busy time, batch-seconds and preemptions."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


class GapSketch:
    """Token gaps (s) and the tokens each stands for, in fixed memory: exact in preallocated arrays up to
    ``EXACT`` values, then folded into a log-spaced histogram whose bins are 0.01 % wide, so a percentile is
    exact for an ordinary run and within 0.01 % for one of any length (never a Python float per token)."""

    EXACT = 1 << 20                     # values kept exactly (16 MiB)
    LOW, HIGH, WIDTH = 1e-9, 1e6, 1e-4  # the histogram's range (s) and relative bin width
    _BINS = int(np.ceil(np.log(HIGH / LOW) / np.log1p(WIDTH))) + 2   # a bin below LOW (0 s gaps) and above HIGH

    def __init__(self) -> None:
        self._v = np.empty(0)
        self._w = np.empty(0)
        self._n = 0
        self._hist: np.ndarray | None = None

    def add(self, values: np.ndarray | list[float], weights: np.ndarray | list[float] | float) -> None:
        """Gaps ``values`` (s), each standing for ``weights`` tokens (one weight for all, or one each)."""
        v = np.asarray(values, dtype=float).ravel()
        if v.size == 0:
            return
        w = np.broadcast_to(np.asarray(weights, dtype=float), v.shape)
        if self._hist is None and self._n + v.size <= self.EXACT:
            if self._n + v.size > self._v.size:          # grow by doubling, never past EXACT
                size = min(max(2 * self._v.size, self._n + v.size, 1024), self.EXACT)
                self._v, self._w = np.resize(self._v, size), np.resize(self._w, size)
            self._v[self._n:self._n + v.size] = v
            self._w[self._n:self._n + v.size] = w
            self._n += v.size
            return
        if self._hist is None:                           # fold what is held, then count in bins from now on
            self._hist = np.zeros(self._BINS)
            held, weight = self._v[:self._n], self._w[:self._n]
            self._v, self._w, self._n = np.empty(0), np.empty(0), 0
            self._count(held, weight)
        self._count(v, w)

    def _count(self, v: np.ndarray, w: np.ndarray) -> None:
        assert self._hist is not None
        with np.errstate(divide="ignore"):
            at = np.floor(np.log(np.maximum(v, self.LOW * 0.5) / self.LOW) / np.log1p(self.WIDTH)) + 1
        idx = np.clip(at, 0, self._BINS - 1).astype(np.int64)
        low = int(idx.min())                  # count over the bins the values span, not all of them (O(values))
        counts = np.bincount(idx - low, weights=w)
        self._hist[low:low + counts.size] += counts

    def merge(self, other: GapSketch) -> None:
        """Add every gap ``other`` holds."""
        self.add(*other.values())

    def values(self) -> tuple[np.ndarray, np.ndarray]:
        """(gaps, weights): the exact values, or once folded each non-empty bin's geometric centre and count."""
        if self._hist is None:
            return self._v[:self._n].copy(), self._w[:self._n].copy()
        full = np.flatnonzero(self._hist)
        centre = np.where(full == 0, 0.0, self.LOW * np.power(1.0 + self.WIDTH, np.maximum(full, 1) - 0.5))
        return centre, self._hist[full]


@dataclass
class Outcome:
    """Per request: first-token and completion times (s), the longest gap between its tokens; all token gaps
    (a fixed-memory sketch of values and weights); the engine's busy time and batch-seconds; preemptions."""

    first: np.ndarray
    done: np.ndarray
    max_gap: np.ndarray
    gaps: GapSketch = field(default_factory=GapSketch)
    busy_s: float = 0.0
    batch_seconds: float = 0.0
    preemptions: int = 0
    arrival: np.ndarray | None = None    # closed loop: when each request was sent (known only as the run goes)

    def token_gaps(self) -> tuple[np.ndarray, np.ndarray]:
        """Every gap between two tokens of a request (s), with how many tokens each value stands for."""
        return self.gaps.values()
