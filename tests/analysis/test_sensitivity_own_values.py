""""What would flip it" names only real flips (issue 42, item 9): a sensitivity variant at the card's own values
(its kernel, its kernel efficiency, its acceptance rate) is judged by the evaluation's own rules, the shipped
alternative included, so it gives the card's own verdict in every cell and its own decision. Before, the
variants were judged without the incumbent: AWQ's memo listed "kernel reads the new format yes" (the card's own
kernel) as flipping docqa-128k and chat-4k-b16 from NO-GO (no gain over int8 weights) to CONDITIONAL."""

import numpy as np
import pytest

import triage

from conftest import CLAIMS

FAST = ("kv2x", "awq", "speculative-decoding")
CARDS = [c.stem if c.stem in FAST else pytest.param(c.stem, marks=pytest.mark.slow)
         for c in sorted(CLAIMS.glob("*.yaml"))]


def _own(claim, row) -> bool:
    """Whether a sensitivity row restates the card's own value."""
    if row.input == "bandwidth_efficiency":
        return row.value == claim.bandwidth_efficiency
    if row.input == "kernel":
        return row.value == claim.kernel
    if row.input == "acceptance":
        spec = claim.change.speculative
        return spec is not None and row.value == spec.acceptance
    return False


@pytest.mark.parametrize("card", CARDS)
def test_a_variant_at_the_cards_own_values_is_the_cards_own_verdict(card):
    ev = triage.evaluate(CLAIMS / f"{card}.yaml").evaluation
    own = [row for row in ev.analysis.sensitivity if _own(ev.claim, row)]
    for row in own:
        assert np.array_equal(row.codes, ev.verdicts.code), (row.input, row.value)
        assert row.decision == ev.decision.verdict, (row.input, row.value)


def test_awqs_own_kernel_flips_nothing():
    ev = triage.evaluate(CLAIMS / "awq.yaml").evaluation
    assert ev.claim.kernel and ev.incumbent is not None            # int8 weight-only or fp8 W8A8 ships
    (row,) = [r for r in ev.analysis.sensitivity if r.input == "kernel" and r.value is True]
    assert np.array_equal(row.codes, ev.verdicts.code)
