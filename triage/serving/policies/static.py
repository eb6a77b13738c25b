"""static: request-level batching (FasterTransformer): a batch of up to max_seqs requests starts when the engine
is idle and runs until all of it is done; arrivals wait for the next batch."""

from __future__ import annotations

from ..engine import Engine
from .base import Policy
from .continuous import prefill_batch


class Static(Policy):
    """Prefill a new batch only on an idle engine; decode it to the end."""

    def step(self, e: Engine) -> None:
        if e.waiting and not e.running and e.admissible(e.waiting[0]):
            prefill_batch(e)
        elif e.running:
            e.decode_jump()
        else:
            raise ValueError("a request's KV does not fit the GPU's free memory")

    def arrival_matters(self, e: Engine) -> bool:
        return False                                  # the batch is fixed until it is done
