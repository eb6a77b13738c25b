"""The first screen never contradicts itself: decision line, shares, blockers, the cells table, the JSON cells,
the reasons and the serving table tell one story, on every shipped card, every example workload file and a set
of hand-made edge workloads (issue 26).

Each check reads two outputs the report builds separately and compares them; none restates how a number is
computed. The invariants come from the decision rules (docs/reading-a-memo.md): GO needs GO requests and
prints no blocker; NO-GO has no GO request, and where some requests pay anyway its rule is a fleet-level one
the first screen states; CONDITIONAL has requests that pay and says what blocks GO.
"""

import re

import pytest

import triage
from triage.report.memo import render_markdown

from conftest import CLAIMS, ROOT

EXAMPLES = ROOT / "examples"

VERDICTS = ("GO", "CONDITIONAL", "NO-GO", "DOES-NOT-FIT")
SHARES = re.compile(r"(DOES-NOT-FIT|CONDITIONAL|NO-GO|GO) on (\d+\.\d) %")
FLEET = re.compile(r"Fleet gain \*\*(\d+\.\d{3})×\*\*")
ROW = re.compile(r"^\| (?P<workload>[^|]+) \| (?P<model>[^|]+) \| (?P<hardware>[^|]+) \| (?P<phase>decode|prefill) "
                 r"\|.*\| \*\*(?P<verdict>[A-Z-]+)\*\*( \(marginal\))? \|$")
SERVING_ROW = re.compile(r"^\| (?P<rate>[\d.]+)(?: \(largest at the SLO: [a-z ]+\))? \| "
                         r"(?P<side>baseline|claim) \|.*\| (?P<goodput>[\d.]+) \| "
                         r"(?P<within>[\d.]+) % \| [\d.]+ \| (?P<met>met|\*\*missed\*\*|no SLO) \|$")
# the rules under which a NO-GO may leave requests that pay (decision.py): each is about the fleet, not a cell
FLEET_RULES = ("the fleet gain is below", "cannot run in the stack", "no workload both sides can serve")


def _first_screen(memo: str) -> list[str]:
    lines = memo.splitlines()
    end = next((i for i, x in enumerate(lines) if x.startswith("## ")), len(lines))
    return lines[:end]


def story_problems(result, memo: str) -> list[str]:
    """Every disagreement between the memo's first screen, its serving tables and the JSON document."""
    d = result.to_dict()
    dec, cells = d["decision"], d["cells"]
    out: list[str] = []
    first = _first_screen(memo)
    line = next((x for x in first if x.startswith("**Decision: ")), "")
    verdict = line.removeprefix("**Decision: ").split(".")[0]
    if verdict != dec["verdict"]:
        out.append(f"decision line says {verdict!r}, the JSON {dec['verdict']!r}")
    # shares: the JSON's are the cells' shares by verdict; the line prints them to 0.1 %
    by_cell = {v: sum(c["share"] for c in cells if c["verdict"] == v) for v in VERDICTS}
    for v in VERDICTS:
        if abs(by_cell[v] - dec["shares"][v]) > 1e-9:
            out.append(f"JSON share {v} {dec['shares'][v]:.4f} but its cells carry {by_cell[v]:.4f}")
    printed = {k: float(x) / 100 for k, x in SHARES.findall(line)}
    if abs(sum(printed.values()) - 1.0) > 0.002:
        out.append(f"the decision line's shares add to {sum(printed.values()):.3f}")
    for v in VERDICTS:
        if abs(printed.get(v, 0.0) - dec["shares"][v]) > 0.0006:
            out.append(f"decision line {v} {printed.get(v, 0.0):.3f}, JSON {dec['shares'][v]:.3f}")
    fleet = FLEET.search(line)
    gain = dec["weighted_speedup"]["end_to_end"]
    if (fleet is None) != (gain is None) or (fleet and abs(float(fleet[1]) - gain) > 0.0006):
        out.append(f"decision line fleet gain {fleet and fleet[1]}, JSON {gain}")
    # the decision against its cells
    blocks = any(x.startswith("**What blocks GO:**") for x in first)
    paying = dec["shares"]["GO"] + dec["shares"]["CONDITIONAL"]
    if dec["verdict"] == "GO" and (dec["shares"]["GO"] <= 0 or blocks):
        out.append("GO without GO requests, or with a blocker printed")
    if dec["verdict"] != "GO" and not blocks:
        out.append(f"{dec['verdict']} and nothing says what blocks GO")
    if dec["verdict"] == "CONDITIONAL" and paying <= 0:
        out.append("CONDITIONAL with no request that pays")
    if dec["verdict"] == "NO-GO" and dec["shares"]["GO"] > 0:
        out.append("NO-GO with GO requests")
    if dec["verdict"] == "NO-GO" and paying > 0:
        if not any(r in dec["rule"] for r in FLEET_RULES):
            out.append(f"NO-GO with {paying:.1%} of requests paying, under a cell-level rule: {dec['rule']!r}")
        elif dec["rule"] not in "\n".join(first):
            out.append(f"NO-GO with {paying:.1%} of requests paying and the first screen never says why "
                       f"({dec['rule']!r})")
    if not any(r.startswith(f"{dec['verdict']} by the rule") for r in dec["reasons"]):
        out.append(f"the decision's reasons do not state its rule: {dec['reasons'][:1]}")
    # the cells table: every row's verdict is a JSON cell's verdict for that workload, model and chip
    seen = {(c["workload"], c["model"], c["hardware"], c["phase"]): set() for c in cells}
    for c in cells:
        seen[c["workload"], c["model"], c["hardware"], c["phase"]].add(c["verdict"])
    for x in first:
        if (row := ROW.match(x)) is None:
            continue
        for hw in row["hardware"].split(", "):
            got = seen.get((row["workload"], row["model"], hw, row["phase"]))
            if got is None or row["verdict"] not in got:
                out.append(f"table row {row['workload']} {hw}: {row['verdict']}, JSON cells {got}")
    # cells: a bound or gain is never printed where neither side fits, nor a verdict other than DOES-NOT-FIT
    # where the claim cannot hold the cell's batch and the gain is a step at that batch
    at_batch = ("tpot_ratio", "ttft_ratio")
    for c in cells:
        name = f"cell {c['workload']} {c['hardware']} {c['context']}/{c['batch']}"
        neither = not c["baseline"]["fits"] and not c["claim"]["fits"]
        if neither and c["end_to_end_metric"] in at_batch and c["speedup"]["end_to_end"] is not None:
            out.append(f"{name}: neither side fits, yet an end-to-end gain {c['speedup']['end_to_end']}")
        if c["verdict"] == "DOES-NOT-FIT" and c["claim"]["fits"]:
            out.append(f"{name}: DOES-NOT-FIT while the claim fits")
        if not c["claim"]["fits"] and c["end_to_end_metric"] in at_batch and c["verdict"] != "DOES-NOT-FIT":
            out.append(f"{name}: the claim does not fit, yet {c['verdict']}")
    # a context beyond a model's window is flagged, in the JSON warnings and in the memo
    m = result.matrix
    windows = {mod.label: mod.max_context for mod in m.models}
    beyond = {c["workload"] for c in cells if windows.get(c["model"]) and c["context"] > windows[c["model"]]}
    if beyond and not any("window" in w.get("message", "") + w.get("kind", "") for w in d["warnings"]):
        out.append(f"contexts beyond the model's window ({sorted(beyond)}) and no warning")
    if beyond and "window" not in memo:
        out.append(f"contexts beyond the model's window ({sorted(beyond)}) and the memo never says so")
    # serving tables: goodput is the throughput's share within every bound; the percentile column agrees with
    # the JSON's slo_met
    served = {}
    for c in cells:
        if "serving" in c:
            for side in ("baseline", "claim"):
                for r in c["serving"][side]["rates"]:
                    # the memo prints a rate to three significant figures (1.45 for 1.4531…)
                    served.setdefault((float(f"{r['rate_rps']:.3g}"), side), []).append(r)
    for x in memo.splitlines():
        if (row := SERVING_ROW.match(x)) is None:
            continue
        runs = served.get((float(row["rate"]), row["side"]), [])
        # the memo prints goodput to three significant figures and the share to 0.1 %
        if not any(abs(r["goodput_rps"] - float(row["goodput"])) <= 0.005 * r["goodput_rps"] + 0.0006
                   and abs(r["goodput_rps"] / r["throughput_rps"] - float(row["within"]) / 100) <= 0.0006
                   and (row["met"] == "met") == bool(r["slo_met"]) for r in runs if r["throughput_rps"]):
            out.append(f"serving row {row['rate']} {row['side']}: {x} matches no simulated run")
    for c in cells:
        for side in ("baseline", "claim"):
            for r in c.get("serving", {}).get(side, {}).get("rates", []):
                if r["goodput_rps"] > r["throughput_rps"] * (1 + 1e-9):
                    out.append(f"{c['workload']} {side} at {r['rate_rps']}: goodput above throughput")
    return out


def _check(card, workloads=None):
    result = triage.evaluate(card, workloads)
    problems = story_problems(result, render_markdown(result))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("card", sorted(CLAIMS.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_card_tells_one_story(card):
    _check(card)


# each example file with a card of the direction it was written for, and kv2x (a cache change every file prices)
EXAMPLE_RUNS = [("kv2x.yaml", "course.yaml"), ("int8-kv.yaml", "course.yaml"), ("kv2x.yaml", "mix-chat.yaml"),
                ("awq.yaml", "mix-chat.yaml"), ("kv2x.yaml", "mix-longdoc.yaml"),
                ("speculative-decoding.yaml", "mix-longdoc.yaml"), ("kv2x.yaml", "serving-conv.yaml"),
                ("kv2x.yaml", "serving-distserve.yaml"), ("kv2x.yaml", "serving-sharegpt.yaml")]


@pytest.mark.slow
@pytest.mark.parametrize("card,workloads", EXAMPLE_RUNS, ids=[f"{c[:-5]}-{w[:-5]}" for c, w in EXAMPLE_RUNS])
def test_every_example_tells_one_story(card, workloads):
    _check(CLAIMS / card, EXAMPLES / workloads)


EDGES = {
    # 128k on an 8k-window model: priced, flagged (the memo said NO-GO over 100 % CONDITIONAL requests)
    "beyond-window": {"defaults": {"model": "llama-3-8b", "hardware": "l40s"},
                      "workloads": [{"name": "long", "context": 131072, "batch": 1},
                                    {"name": "short", "context": 2048, "batch": 8}]},
    # nothing fits on either side: no bound, no gain
    "nothing-fits": {"defaults": {"model": "llama-2-70b", "hardware": "a100-40gb"},
                     "workloads": [{"name": "huge", "context": 131072, "batch": 8},
                                   {"name": "small", "model": "llama-2-7b", "context": 2048, "batch": 1}]},
    # capacity: the baseline fits only a smaller batch than the claim
    "capacity": {"defaults": {"model": "llama-2-7b", "hardware": "a100-80gb"},
                 "workloads": [{"name": "long", "context": 32768, "batch": 5},
                               {"name": "chat", "context": 4096, "batch": 8}]},
    # a serving workload under the defaults' SLO, beside a step-level one
    "serving": {"defaults": {"model": "llama-2-7b", "hardware": "a100-80gb", "slo": {"ttft": "2 s", "tpot": "100 ms"}},
                "workloads": [{"name": "svc", "share": 0.5,
                               "traffic": {"rates": [0.5, 4, 40], "arrivals": "poisson", "prompt_tokens": 512,
                                           "output_tokens": 128, "requests": 400}},
                              {"name": "step", "share": 0.5, "context": 4096, "batch": 8}]},
    # an SLO no batch meets, and prefill beside decode
    "tight-slo": {"defaults": {"model": "llama-2-13b", "hardware": "l40s", "slo": {"tpot": "5 ms", "ttft": "20 ms"}},
                  "workloads": [{"name": "decode", "context": 4096, "batch": 8},
                                {"name": "prefill", "phase": "prefill", "context": 8192, "batch": 1}]},
}
EDGE_CARDS = ("kv2x.yaml", "awq.yaml", "speculative-decoding.yaml", "int8-weights.yaml")


@pytest.mark.parametrize("edge", sorted(EDGES))
@pytest.mark.parametrize("card", EDGE_CARDS, ids=[c[:-5] for c in EDGE_CARDS])
def test_edge_workloads_tell_one_story(card, edge):
    _check(CLAIMS / card, EDGES[edge])


def test_the_checker_finds_a_contradiction():
    """The checker is not vacuous: a memo whose decision line is edited to disagree is caught, on each count."""
    result = triage.evaluate(CLAIMS / "kv2x.yaml")
    memo = render_markdown(result)
    assert story_problems(result, memo) == []
    line = next(x for x in memo.splitlines() if x.startswith("**Decision: "))
    gain = re.search(r"\*\*(\d\.\d{3})×\*\*", line)[1]                  # the fleet gain, 0.1× off below
    wrong = memo.replace(line, line.replace("CONDITIONAL on 50.0 %", "CONDITIONAL on 60.0 %")
                         .replace(f"**{gain}×**", f"**{float(gain) + 0.1:.3f}×**")
                         .replace("Decision: CONDITIONAL", "Decision: GO"))
    found = "\n".join(story_problems(result, wrong))
    assert "decision line says 'GO'" in found and "decision line CONDITIONAL 0.600" in found
    assert f"fleet gain {float(gain) + 0.1:.3f}" in found
