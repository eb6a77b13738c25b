"""static: request-level batching (FasterTransformer): a batch of up to max_seqs requests starts when the engine
is idle and runs until all of it is done; arrivals wait for the next batch."""

from __future__ import annotations

from ..engine import Engine
from .continuous import Continuous


class Static(Continuous):
    """The continuous policy's prefill, started only on an idle engine; the batch then decodes to its end."""

    def starts(self, e: Engine) -> bool:
        return not e.running and super().starts(e)

    def arrival_matters(self, e: Engine) -> bool:
        return False                                  # the batch is fixed until it is done
