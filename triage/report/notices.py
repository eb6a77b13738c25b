"""The memo's and the JSON's words for each notice (analysis/notices.py): {code, message}, as the JSON
contract names them."""

from __future__ import annotations

from collections.abc import Iterable

from ..analysis.notices import HINTS, Notice
from ..errors import escape
from ..inputs.registry import registry

_HINTS = {"already-in-stack": "today's stack already runs it: {value}; the change is the baseline, not a saving",
          "already-fused": "its attention is already {value}: no score traffic to save",
          "already-split": "its decode attention already splits the KV",
          "same-dtype": "it already computes in {value}",
          "budget-covers": "the budget of {budget:,.0f} keys covers its {context:,.0f}-token context",
          "same-step": "its bytes, FLOPs and kernels are the same with the change"}
assert set(_HINTS) == set(HINTS)
# what a dtype change key would run in it ("the ... there keep(s) the workload's rate")
_OPERATORS = {"compute_dtype": "linear layers there keep", "attention_dtype": "attention there keeps"}


def _names(names: Iterable[str]) -> str:
    names = list(names)
    return ", ".join(names[:6]) + (" …" if len(names) > 6 else "")


def _hint(n: Notice) -> str:
    budget, context = n.numbers if n.key == "budget-covers" else (0.0, 0.0)
    return _HINTS[n.key].format(value=n.value, budget=budget, context=context)


def words(n: Notice) -> str:
    """One notice in words."""
    one = len(n.names) == 1
    if n.code == "prediction-above":
        predicted, measured = n.numbers
        return (f"in the paper's own setting triage predicts {predicted:.2f}× end to end, above the paper's "
                f"measured {measured:.2f}×: the gains below are likely optimistic for this method (see \"The "
                f"paper's own setting\")")
    if n.code == "prediction-below":
        predicted, measured, bound, beyond = n.numbers
        baseline = f" ({escape(n.value, 80)})" if n.value else ""
        why = (f"beyond the step's bound of {bound:.2f}× too, so the step alone cannot give it (the paper check "
               f"lists where such a gain usually comes from)" if beyond else
               f"within the step's bound of {bound:.2f}×: the paper's baseline{baseline} may be slower than today's "
               f"stack, or its kernel nearer the bound than the shipped defaults' efficiencies and fixed costs, and "
               f"the gains below pessimistic for this method")
        return (f"in the paper's own setting triage predicts {predicted:.2f}× end to end, under half the paper's "
                f"measured {measured:.2f}×, {why}: see \"The paper's own setting\"")
    if n.code == "multiplier-grows":
        (value,) = n.numbers
        quantity = registry()[n.key].multiplies
        return (f"change.{n.key}: {value:g} grows {quantity} {value:g}× — a {value:g}× saving is {n.key}: "
                f"{1 / value:.3g} (the multiplier is the claim's {quantity} ÷ the baseline's)")
    if n.code == "domain-unused":
        return (f"speculative.by_domain gives {', '.join(n.names)}, which no workload states (workloads: domain:): "
                f"{'it is' if one else 'they are'} not priced; every workload gets the card's default")
    if n.code == "dtype-missing":
        return (f"{n.key} {n.value}: {', '.join(n.names)} {'has' if one else 'have'} no dense {n.value} peak, so "
                f"the {_OPERATORS[n.key]} the workload's rate (no gain from the dtype)")
    if n.code == "phase-untouched":
        return (f"{n.key} acts at {' and '.join(n.phases)} only: {_names(n.names)} {'is' if one else 'are'} "
                f"priced " + ("unchanged (1.00×)" if n.alone else "without it"))
    if n.code == "no-effect":
        return f"the change does not act on {_names(n.names)}: priced 1.00× there ({_hint(n)})"
    if n.code == "beyond-window":
        cells = ", ".join(f"{w} ({model}, {context:,} tokens > {window:,})" for w, model, context, window in n.cells)
        return ("priced beyond the model's trained window (max_position_embeddings): " + cells
                + " — the model was not trained for that context; its quality there is unknown")
    if n.code == "profile-range":
        b0, b1, c0, c1, outside = n.numbers
        return (f"the {n.key} profile's {n.value} entry was fitted on {' and '.join(n.phases)} steps at batch "
                f"{b0:,.0f}–{b1:,.0f}, {c0:,.0f}–{c1:,.0f} tokens"
                + (f", {'/'.join(n.weights)} weights" if n.weights else "")
                + f": {outside:,.0f} cell(s) of {n.names[0]} lie outside it and are priced with the profile's "
                  f"default values")
    if n.code == "profile-tp":
        t0, t1, tp, claimed = n.numbers
        ran = f"{t0:,.0f}" + (f"–{t1:,.0f}" if t1 > t0 else "")
        who = f"the claim runs {n.names[0]}" if claimed else f"{n.names[0]} runs"
        return (f"the {n.key} profile's {n.value} entry was fitted on steps at tp {ran}; {who} at tp {tp:,.0f}, its "
                f"cells in the entry's range priced with it: its per-sequence and per-request costs are the host's, "
                f"its efficiencies and per-step and per-layer costs those of steps at tp {ran} (bandwidth-bound "
                f"steps can differ most)")
    if n.code == "serving-unpriced":
        return (f"{n.key} is not modelled by the serving simulation (its iterations emit one token a sequence): "
                f"{', '.join(n.names)} is priced without it, so its gain there is not counted; the step-level "
                f"workloads carry it")
    assert n.code == "scheduler-unpriced", n.code
    return ("change.scheduler acts on the request queue, and no workload here has traffic: (a request stream): the "
            "steps are priced unchanged; give a workload traffic: and a scheduler: (e.g. examples/serving-conv.yaml) "
            "to price it")


def as_json(notices: Iterable[Notice]) -> list[dict[str, str]]:
    """The JSON's warnings: [{code, message}]."""
    return [{"code": n.code, "message": words(n)} for n in notices]

