"""Property tests (hypothesis) of the loader and the engine.

The default profile runs 100 examples per property; a long run:
    HYPOTHESIS_PROFILE=long .venv/bin/python -m pytest tests/test_properties.py
"""

from __future__ import annotations

import math
import os
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import triage
from triage.errors import UserError
from triage.inputs import cards, catalog, workloads
from triage.io import yamlio
from triage.io.resources import schema

settings.register_profile("default", max_examples=100, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=3000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

CAT = catalog.load()
MODELS = sorted(CAT.models)
HARDWARE = sorted(CAT.hardware)
CHANGE_KEYS = sorted(schema("claim")["properties"]["change"]["properties"])
CARD_KEYS = sorted(schema("claim")["properties"])

# ---- the loader: no input escapes as anything but a Claim or a UserError -------------------------

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=12), inner, max_size=4)),
                      max_leaves=12)
near_cards = st.fixed_dictionaries(
    {}, optional={**{k: values for k in CARD_KEYS},
                  "change": st.dictionaries(st.sampled_from(CHANGE_KEYS + ["kv_byte", "bogus"]), values, max_size=4)})


@given(st.text(max_size=400))
def test_any_text_loads_or_fails_cleanly(text):
    try:
        cards.from_document(yamlio.load(text, "fuzz.yaml"))
    except UserError as err:
        assert err.problems and all(p.file == "fuzz.yaml" for p in err.problems)


@given(st.binary(max_size=300))
def test_any_bytes_load_or_fail_cleanly(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("fuzz") / "card.yaml"
    path.write_bytes(data)
    try:
        cards.load(path)
    except UserError as err:
        assert err.problems


@given(near_cards)
def test_any_structure_validates_or_fails_cleanly(data):
    try:
        claim = cards.load(data)
    except UserError as err:
        assert all(str(p).startswith("<card>") for p in err.problems)
    else:
        assert claim.change


@given(st.dictionaries(st.sampled_from(["hardware", "models", "defaults", "workloads", "grid", "typo"]), values,
                       max_size=4))
def test_any_workload_structure_loads_or_fails_cleanly(data):
    try:
        workloads.load(data)
    except UserError as err:
        assert err.problems


# ---- the engine: invariants over random valid cards and matrices ---------------------------------

fraction = st.floats(0.05, 1.0)
changes = st.fixed_dictionaries({}, optional={
    "kv_bytes": fraction, "weight_bytes": fraction, "linear_flops": fraction, "attention_flops": fraction,
    "kv_tokens": st.one_of(st.fixed_dictionaries({"keep": fraction}),
                           st.fixed_dictionaries({"budget": st.integers(1, 200_000)}))}).filter(bool)
cells = st.fixed_dictionaries({
    "model": st.sampled_from(MODELS), "hardware": st.sampled_from(HARDWARE),
    "phase": st.sampled_from(["decode", "prefill"]), "context": st.integers(1, 262_144),
    "batch": st.integers(1, 512)})
precisions = st.fixed_dictionaries({"weights": st.sampled_from(["fp16", "bf16", "fp8", "int8", "int4"]),
                                    "kv": st.sampled_from(["fp16", "fp8", "int8", "int4"])})


def _card(change, **extra):
    return {"id": "p", "title": "property", "direction": "cache", "change": change, **extra}


def _matrix(cell_list, precision=None, attention="fused"):
    defaults = {"attention": attention, **({"precision": precision} if precision else {})}
    return {"defaults": defaults,
            "workloads": [{"name": f"w{i}", **c} for i, c in enumerate(cell_list)]}


@given(changes, st.lists(cells, min_size=1, max_size=6), precisions, st.sampled_from(["fused", "eager"]),
       st.booleans())
def test_times_and_bytes_finite_positive_and_savings_never_slow_the_bound(change, cell_list, precision, attention,
                                                                          kernel):
    r = triage.evaluate(_card(change, implementation={"kernel": kernel}), _matrix(cell_list, precision, attention))
    g = r.gaps
    for v in (g.base, g.claim):
        for arr in (v.time_theoretical, v.time_implementation, v.time_end_to_end, v.cost.total_bytes,
                    v.memory_bytes):
            assert np.all(np.isfinite(arr)) and np.all(arr > 0)
    # every multiplier <= 1: the bound never gets worse
    assert np.all(g.speedup_theoretical >= 1 - 1e-12)
    assert np.all(g.speedup_implementation >= 1 - 1e-12)


# ---- every mechanism of the registry, alone and combined: invariants of the three layers --------------

def _budget_or_keep(extra=None):
    extra = extra or {}
    return st.one_of(st.fixed_dictionaries({"keep": fraction}, optional=extra),
                     st.fixed_dictionaries({"budget": st.integers(1, 200_000)}, optional=extra))


SMALL_MODELS = sorted(k for k in MODELS if CAT.models[k].params < 2e10)
MECHANISM_VALUES = {
    "distill_to": st.sampled_from(SMALL_MODELS),
    "kv_heads": st.integers(1, 16),
    "kv_latent": st.fixed_dictionaries({"elements": st.integers(64, 2048)}),
    "kv_bytes": fraction,
    "kv_quant": st.fixed_dictionaries({"bits": st.sampled_from([2, 3, 4, 8])},
                                      optional={"group_size": st.sampled_from([32, 64, 128]),
                                                "zero_bits": st.sampled_from([0, 16]),
                                                "residual_tokens": st.integers(0, 4096),
                                                "outliers": st.floats(0.0, 0.05)}),
    "kv_tokens": _budget_or_keep(),
    "kv_read": _budget_or_keep({"metadata": st.floats(0.0, 0.2)}),
    "prefix_hit": st.floats(0.0, 0.95),
    "memory_waste": st.floats(0.0, 0.9),
    "attention_flops": fraction,
    "prefill_attention_flops": fraction,
    "score_bytes": st.floats(0.0, 1.0),
    "split_kv": st.booleans(),
    "weight_bytes": fraction,
    "weight_quant": st.fixed_dictionaries({"bits": st.sampled_from([2, 3, 4, 8]),
                                           "group_size": st.sampled_from([32, 64, 128, 1024])}),
    "sparsity": st.sampled_from([{"pattern": "2:4"}, {"pattern": "1:4"}, {"pattern": "4:8"}]),
    "compute_dtype": st.sampled_from(["int8", "fp8", "int4", "fp4"]),
    "attention_dtype": st.sampled_from(["fp8", "int8"]),
    "streaming_heads": st.fixed_dictionaries({"share": st.floats(0.01, 1.0), "tokens": st.integers(1, 65_536)}),
    "sparse_attention": st.fixed_dictionaries({"budget": st.integers(1, 65_536),
                                               "phases": st.sampled_from([["decode"], ["prefill"],
                                                                          ["decode", "prefill"]])}),
    "hadamard": st.fixed_dictionaries({"size": st.integers(2, 65_536), "per_layer": st.floats(0.1, 4.0)}),
    "linear_flops": fraction,
    "low_rank": st.fixed_dictionaries({"rank": st.integers(1, 8192)}),
    "speculative": st.one_of(
        st.fixed_dictionaries({"tokens": st.integers(1, 8), "acceptance": st.floats(0.0, 1.0),
                               "draft_cost": st.floats(0.01, 0.5)}),
        st.fixed_dictionaries({"tokens_per_step": st.floats(1.0, 4.0), "verify_tokens": st.integers(3, 64),
                               "draft_model": st.sampled_from(["llama-3.2-1b"])})),
    "tp": st.sampled_from([1, 2, 4, 8]),
    "batching": st.fixed_dictionaries({"utilization": st.floats(0.1, 1.0)}),
    "scheduler": st.fixed_dictionaries({"policy": st.sampled_from(["static", "continuous", "chunked"])},
                                       optional={"token_budget": st.integers(1, 8192)}),
    "dequant_ops": st.one_of(st.floats(0.0, 8.0),
                             st.fixed_dictionaries({}, optional={"kv": st.floats(0.0, 8.0),
                                                                 "weights": st.floats(0.0, 8.0)})),
}


def test_every_mechanism_of_the_registry_is_fuzzed():
    from triage.model.mechanisms import REGISTRY

    assert set(MECHANISM_VALUES) == set(REGISTRY)


any_change = st.lists(st.sampled_from(sorted(MECHANISM_VALUES)), min_size=1, max_size=4, unique=True).flatmap(
    lambda keys: st.fixed_dictionaries({k: MECHANISM_VALUES[k] for k in keys}))
serving_cells = st.fixed_dictionaries({
    "model": st.sampled_from(SMALL_MODELS), "hardware": st.sampled_from(HARDWARE),
    "phase": st.sampled_from(["decode", "prefill"]), "context": st.integers(1, 131_072),
    "batch": st.integers(1, 256)})


@given(any_change, st.lists(serving_cells, min_size=1, max_size=4), st.booleans(),
       st.sampled_from(["fused", "eager", "split"]))
def test_any_mechanism_keeps_quantities_physical_and_layers_ordered(change, cell_list, kernel, attention):
    try:
        r = triage.evaluate(_card(change, implementation={"kernel": kernel}), _matrix(cell_list, attention=attention),
                            analyse=False)
    except UserError as err:                 # GQA to as many heads as the models have: refused, never a no-op
        assert "kv_heads" in change and "does not reduce the KV heads" in str(err), err
        return
    for v in (r.gaps.base, r.gaps.claim):
        x = v.inputs
        for arr in (*v.cost.bytes.values(), *v.cost.flops.values(), v.cost.total_bytes, v.cost.total_flops,
                    v.memory_bytes, x.body_params, x.routed_expert_params, x.stored_params,
                    v.time_theoretical, v.time_implementation, v.time_end_to_end):
            assert np.all(np.isfinite(arr)) and np.all(np.asarray(arr) >= 0), change
        assert np.all(v.time_theoretical > 0)
        assert np.all((v.compute_bound_fraction >= 0) & (v.compute_bound_fraction <= 1)), change
        # theoretical <= implementation <= end-to-end, per cell (a bound is a bound)
        assert np.all(v.time_theoretical <= v.time_implementation * (1 + 1e-12)), change
        assert np.all(v.time_implementation <= v.time_end_to_end * (1 + 1e-12)), change
    for c in r.to_dict(with_analysis=False)["cells"]:
        for side in ("baseline", "claim"):
            assert 0.0 <= c[side]["compute_bound_fraction"] <= 1.0
        for k, share in c["time_saved_fraction"].items():
            assert share is None or share <= 1.0, k


# Multi-head KV attention at decode does H/H_kv FLOP per byte, far below every ridge point, so a KV saving
# grows with context. MLA does ~250 FLOP/B: compute-bound on some chips (test_mla_decode_attention_...).
MHA_MODELS = [k for k in MODELS if not CAT.models[k].is_mla]


@given(fraction, st.sampled_from(MHA_MODELS), st.sampled_from(HARDWARE), st.integers(1, 64),
       st.lists(st.integers(1, 262_144), min_size=2, max_size=6, unique=True))
def test_kv_only_saving_grows_with_context(kv, model, hw, batch, contexts):
    contexts.sort()
    m = _matrix([{"model": model, "hardware": hw, "phase": "decode", "context": c, "batch": batch}
                 for c in contexts])
    s = triage.evaluate(_card({"kv_bytes": kv}), m).gaps.speedup_theoretical
    assert np.all(np.diff(s) >= -1e-12)


@pytest.mark.slow
@given(fraction, fraction, cells)
def test_stacking_disjoint_byte_savings_adds_the_savings(kv, w, cell):
    m = _matrix([cell])
    a = triage.evaluate(_card({"kv_bytes": kv}), m).gaps
    b = triage.evaluate(_card({"weight_bytes": w}), m).gaps
    both = triage.evaluate([_card({"kv_bytes": kv}, id="kv"), _card({"weight_bytes": w}, id="w")], m).gaps  # stacked
    assert both.speedup_theoretical[0] >= max(a.speedup_theoretical[0], b.speedup_theoretical[0]) - 1e-12
    total = a.base.cost.total_bytes[0]
    saved_a = total - a.claim.cost.total_bytes[0]
    saved_b = total - b.claim.cost.total_bytes[0]
    assert math.isclose(both.claim.cost.total_bytes[0], total - saved_a - saved_b, rel_tol=1e-12)
    if both.base.compute_bound_fraction[0] == 0 and both.claim.compute_bound_fraction[0] == 0:
        # bandwidth-bound: bytes / (bytes − both savings), which can beat the product of the two
        assert math.isclose(both.speedup_theoretical[0], total / (total - saved_a - saved_b), rel_tol=1e-9)


@pytest.mark.slow
@given(changes, st.lists(cells, min_size=2, max_size=6), st.randoms(use_true_random=False))
def test_results_do_not_depend_on_workload_order(change, cell_list, rnd: random.Random):
    named = [{"name": f"w{i}", **c} for i, c in enumerate(cell_list)]
    shuffled = named[:]
    rnd.shuffle(shuffled)
    a = {c["workload"]: c for c in triage.evaluate(_card(change), {"workloads": named}).to_dict()["cells"]}
    b = {c["workload"]: c for c in triage.evaluate(_card(change), {"workloads": shuffled}).to_dict()["cells"]}
    assert a == b
