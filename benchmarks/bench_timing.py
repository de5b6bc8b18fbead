"""Timing a call where the code under measurement makes it: the benchmarks wrap a callable (vLLM's Sampler, a
replica's decode_forward, ttnn.execute_trace) to split a step's time into that call's share and the rest."""

from __future__ import annotations

import time


class Timed:
    """Wraps a callable and adds up the seconds spent in it."""

    def __init__(self, fn: object) -> None:
        self.fn, self.seconds = fn, 0.0

    def __call__(self, *args: object, **kwargs: object) -> object:
        t = time.perf_counter()
        try:
            return self.fn(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - t
