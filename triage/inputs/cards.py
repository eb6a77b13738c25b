"""Claim cards: load and validate (schema, then meaning) into a frozen Claim; stacks compose their cards."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from ..defaults import CARD_EFFICIENCY, CARD_KERNEL, CARD_LONG_CONTEXT_TESTED, LIMITS, PAPER_HARDWARE
from ..errors import NEAR, Problem, UserError
from ..io.yamlio import Document, document, load_file
from . import catalog as catalog_mod
from . import change as change_mod
from . import traffic as traffic_mod
from . import units
from .claim import Claim, Offload, Paper, Precision, QualityFigure, Setting, Statement
from .hfconfig import load_model
from .specs import Model, is_config_path
from .stack import stack
from .validation import validate


def _models(doc: Document, cat: catalog_mod.Catalog, problems: list[Problem]) -> dict[str, Model]:
    """The models a card names (its setting's, a draft, a distillation target) that are config.json paths,
    loaded relative to the card; a name that is neither in the catalog nor a path is a problem."""
    data = doc.data
    change = data.get("change", {})
    spec = change.get("speculative")
    setting = data.get("claim", {}).get("setting", {})
    named = [(("claim", "setting", "model"), setting.get("model")),
             (("claim", "setting", "baseline_model"), setting.get("baseline_model")),
             (("change", "distill_to"), change.get("distill_to")),
             (("change", "speculative", "draft_model"), spec.get("draft_model") if isinstance(spec, dict) else None)]
    out: dict[str, Model] = {}
    for where, name in named:
        if not isinstance(name, str) or name in out:
            continue
        if is_config_path(name):
            config = Path(name) if Path(name).is_absolute() or doc.file.startswith("<") else \
                Path(doc.file).parent / name
            try:
                out[name] = load_model(config, key=name)
            except UserError as err:
                problems += err.problems
        elif name not in cat.models:
            problems.append(doc.problem(where, f"unknown model{NEAR}; define it with --catalog or in the workload "
                                               f"file's models:", near=(name, cat.models)))
    return out


def _semantic(doc: Document, cat: catalog_mod.Catalog) -> tuple[list[Problem], dict[str, Model]]:
    """Checks the schema cannot express: names exist, a headline has its metric; the card's config.json
    models."""
    problems: list[Problem] = []
    data = doc.data
    setting = data.get("claim", {}).get("setting", {})
    models = _models(doc, cat, problems)
    link = setting.get("offload", {}).get("link") if isinstance(setting.get("offload"), dict) else None
    if link is not None:
        catalog_mod.quantity(doc, ("claim", "setting", "offload", "link"), "bandwidth", problems)
    name = setting.get("hardware")
    if name is not None and name not in cat.hardware:
        problems.append(doc.problem(("claim", "setting", "hardware"), (
            f"unknown hardware{NEAR}; define it with --catalog or in the workload file's hardware:"),
            near=(name, cat.hardware)))
    compute = setting.get("precision", {}).get("compute") if isinstance(setting.get("precision"), dict) else None
    hw = cat.hardware.get(setting.get("hardware", PAPER_HARDWARE))
    if compute is not None and hw is not None and not hw.has_peak(compute):
        problems.append(doc.problem(("claim", "setting", "precision", "compute"), (
            f"hardware {hw.key!r} has no dense {compute} peak; it lists {', '.join(hw.compute_flops_per_s)}")))
    change = data.get("change", {})
    spec = change.get("speculative")
    if spec is not None and ("draft_model" in spec) == ("draft_cost" in spec):
        problems.append(doc.problem(("change", "speculative"), "give a draft_model or a draft_cost (not both)"))
    if isinstance(spec, dict) and "tokens_per_step" in spec and "verify_tokens" in spec \
            and spec["tokens_per_step"] > spec["verify_tokens"] + 1:
        problems.append(doc.problem(("change", "speculative", "tokens_per_step"), (
            "a step cannot accept more tokens than it verifies plus the bonus token (verify_tokens + 1)")))
    if isinstance(spec, dict) and spec.get("draft_passes") == 0 and not spec.get("draft_model") \
            and not spec.get("draft_cost"):
        problems.append(doc.problem(("change", "speculative"), "a draft that costs nothing and runs no pass is "
                                                               "not a draft: give draft_passes or a draft_cost"))
    pattern = change.get("sparsity", {}).get("pattern") if isinstance(change.get("sparsity"), dict) else None
    if isinstance(pattern, str) and ":" in pattern:
        n, m = (int(x) for x in pattern.split(":"))
        if n >= m:
            problems.append(doc.problem(("change", "sparsity", "pattern"), (
                f"{pattern} keeps {n} of every {m} weights: N must be below M")))
    if isinstance(change.get("scheduler"), dict):
        traffic_mod.parse_links(doc, ("change", "scheduler"), problems)
    problems += _quality_problems(doc, cat, models)
    impl = data.get("implementation", {})
    where = impl.get("kernel_in")
    if where is not None and (where == "none") == impl.get("kernel", CARD_KERNEL):
        problems.append(doc.problem(("implementation", "kernel_in"), (
            f"kernel_in {where} contradicts kernel {str(impl.get('kernel', True)).lower()}: 'none' goes with "
            f"kernel false, 'engine' and 'paper' with kernel true")))
    claim = data.get("claim", {})
    if "speedup" in claim and "metric" not in claim:
        problems.append(doc.problem(("claim",), "a speedup needs its metric (tpot, ttft, throughput or memory)"))
    return problems, models


def figure_params(figure: dict[str, Any], cat: catalog_mod.Catalog, models: dict[str, Model]) -> float | None:
    """The parameters of the model a quality figure was measured on: its own ``params``, else the catalog's."""
    if "params" in figure:
        return float(figure["params"])
    known = models.get(figure["model"]) or cat.models.get(figure["model"])
    return known.params if known is not None else None


def _quality_problems(doc: Document, cat: catalog_mod.Catalog, models: dict[str, Model]) -> list[Problem]:
    """Each quality figure's model is known (a catalog name, or params given); a perplexity of 0 is no figure."""
    problems = []
    for i, f in enumerate(doc.data.get("quality", {}).get("figures", [])):
        if figure_params(f, cat, models) is None:
            problems.append(doc.problem(("quality", "figures", i, "model"), (
                f"the figure's model is not in the catalog: give its params (the measured model's parameter "
                f"count, e.g. 175e9){NEAR}"), near=(f["model"], cat.models)))
        if f["kind"] == "perplexity" and f["claim"] <= 0:
            problems.append(doc.problem(("quality", "figures", i, "claim"), "a perplexity is above 0"))
    return problems


# a source's version: arXiv vN, a commit hash, a release tag or a dated page
VERSION = re.compile(r"(?:\b|\d)v\d+(\.\d+)*\b"                                 # arXiv 2402.02750v2, v0.2.5
                     r"|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b"     # a commit (hex, not a word)
                     r"|\b(19|20)\d\d-\d\d(-\d\d)?\b")                             # a page's date
# the numbers a paper card reports: each needs evidence under --strict (a setting's keys all do)
# (a speculative card's tokens per step or acceptance is the mechanism's parameter: with evidence the paper
# check rests on the paper's number, without it the check says it rests on the card's own assumption)
REPORTED = (("claim", "speedup"), ("quality", "retained"))
IMPLEMENTATION_EVIDENCE = ("kernel_in", "bandwidth_efficiency", "compute_efficiency")


def _leaves(value: Any, path: tuple[str, ...]) -> list[tuple[str, ...]]:
    if isinstance(value, dict) and path[-1] != "offload":
        return [leaf for k, v in value.items() for leaf in _leaves(v, path + (k,))]
    return [path]


def _present(data: dict[str, Any], path: tuple[str, ...]) -> bool:
    node: Any = data
    for part in path:
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return False
    return True


def _evidence_problems(doc: Document) -> list[Problem]:
    """Evidence for a number the card does not give (a typo in a path, or a number removed) is an error, blamed
    on the evidence mapping at the key's line (the key itself is not repeated)."""
    return [doc.problem(("evidence",), "evidence for a number the card does not give (is its path misspelt?)",
                        key=True, at=("evidence", key))
            for key in doc.data.get("evidence", {}) if not _present(doc.data, tuple(key.split(".")))]


def strict(doc: Document) -> list[Problem]:
    """A paper card's numbers each carry evidence, {quote, where}, and each `where` names its source's version
    (what `triage validate --strict` adds; non-paper cards, the course's, need none)."""
    data = doc.data
    if not isinstance(data, dict) or "paper" not in data:
        return []
    evidence = data.get("evidence", {})
    setting = data.get("claim", {}).get("setting", {})
    needed = [p for p in REPORTED if _present(data, p)] + (_leaves(setting, ("claim", "setting")) if setting else [])
    # every quality figure, every change value, where the kernel is and any kernel efficiency the card claims
    needed += [("quality", "figures", str(i)) for i in range(len(data.get("quality", {}).get("figures", [])))]
    needed += _leaves(data.get("change", {}), ("change",)) if data.get("change") else []
    needed += [("implementation", k) for k in IMPLEMENTATION_EVIDENCE if k in data.get("implementation", {})]
    problems = []
    for path in needed:
        # a setting's keys each need their own; a change's composite value may carry one for all its fields, and
        # one quote of a table (evidence.quality.figures) may stand for every figure read from it
        shared = path[0] == "change" or path[:2] == ("quality", "figures")
        keys = {".".join(path[:i]) for i in range(2 if shared else 3, len(path) + 1)} | {".".join(path)}
        if not keys & set(evidence):
            problems.append(doc.problem(path, f"no evidence: give evidence.{'.'.join(path)}: {{quote, where}} "
                                              f"from the paper (--strict)"))
    if "assumption" in evidence.get("claim.speedup", {}):
        problems.append(doc.problem(("evidence", "claim.speedup"), (
            "the reported number is the paper's: quote it ({quote, where}), an assumption cannot stand for it "
            "(--strict)"), key=True))
    for key, entry in evidence.items():
        if "where" in entry and not VERSION.search(entry["where"]):
            problems.append(doc.problem(("evidence", key, "where"), (
                "names no version of its source: add the arXiv version (v2), a commit or the page's date (--strict)")))
    return problems


class _Budget:
    """Cards one stack may still load (LIMITS.stacked_cards), nested stacks included."""

    def __init__(self) -> None:
        self.left = LIMITS.stacked_cards


def load(source: str | Path | Mapping[str, Any], catalog: catalog_mod.Catalog | None = None,
         _seen: tuple[str, ...] = (), _budget: _Budget | None = None, strict_evidence: bool = False) -> Claim:
    """Read and validate a card (a path, or an already-parsed dict); raise UserError listing every problem.

    A card with ``stack: [a.yaml, b.yaml]`` composes those cards (paths relative to it): at most
    LIMITS.stacked_cards cards in all, none twice, no cycle; a card that cannot be read is blamed on the line
    that names it. ``strict_evidence`` also requires a paper card's evidence (``strict``).
    """
    doc = document("<card>", dict(source)) if isinstance(source, Mapping) else load_file(source)
    claim = from_document(doc, catalog, strict_evidence)
    if isinstance(doc.data, dict) and "stack" in doc.data:
        budget = _budget or _Budget()
        here = Path(doc.file).parent if not isinstance(source, Mapping) else Path(".")
        me = str(Path(doc.file).resolve())
        parts, named = [], set()
        for i, name in enumerate(doc.data["stack"]):
            path = (here / name).resolve()
            if str(path) in _seen or str(path) == me:
                raise UserError([doc.problem(("stack", i), "this card stacks itself (a cycle)")])
            if str(path) in named:
                raise UserError([doc.problem(("stack", i), "this card is stacked twice: its savings would count "
                                                           "twice")])
            named.add(str(path))
            budget.left -= 1
            if budget.left < 0:
                raise UserError([doc.problem(("stack", i), f"a stack may load at most {LIMITS.stacked_cards} "
                                                           f"cards, nested stacks included (limit stacked_cards)")])
            try:
                parts.append(load(path, catalog, _seen + (me,), budget))
            except UserError as err:
                if all(p.path == "" for p in err.problems):       # the file itself: name the line naming it
                    raise UserError([doc.problem(("stack", i), f"{p.file}: {p.message}") for p in err.problems]) \
                        from None
                raise
        stacked = stack(parts, claim.id, claim.title)
        paper = claim.paper if claim.paper != Paper() else stacked.paper
        own = {f.name: v for f in fields(Statement) if (v := getattr(claim.claim, f.name)) is not None}
        merged = replace(stacked.claim, **{**own, "order": tuple(dict.fromkeys((*stacked.claim.order,
                                                                              *claim.claim.order)))})
        return replace(stacked, file=claim.file, direction=claim.direction, paper=paper, claim=merged,
                       evidence=claim.evidence)
    return claim


# What `triage new` writes where only the paper can say: a card still holding one is refused, not priced.
PLACEHOLDER = "TODO"


def _placeholders(value: Any, path: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """The paths of text values that are still `triage new` placeholders (they start with PLACEHOLDER, or a
    URL ends in it)."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _placeholders(v, path + (k,))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _placeholders(v, path + (i,))]
    text = value.strip() if isinstance(value, str) else ""
    return [path] if text.startswith(PLACEHOLDER) or text.endswith("/" + PLACEHOLDER) else []


def placeholder_problems(doc: Document) -> list[Problem]:
    """One problem per placeholder left in the card: its numbers would be priced as if the paper said them."""
    return [doc.problem(path, f"a placeholder from `triage new` ({PLACEHOLDER}): replace it with the paper's "
                              f"value, or delete the line") for path in _placeholders(doc.data, ())]


def _paper(raw: dict[str, Any]) -> Paper:
    """The card's schema-valid paper section, typed."""
    return Paper(**{**raw, **({"authors": tuple(raw["authors"])} if "authors" in raw else {})}, order=tuple(raw))


def _statement(raw: dict[str, Any]) -> Statement:
    """The card's schema-valid claim section, typed; its setting's offload link in bytes/s (checked already)."""
    setting = dict(raw.get("setting") or {})
    if "precision" in setting:
        setting["precision"] = Precision(**setting["precision"], order=tuple(setting["precision"]))
    if "offload" in setting:
        off = setting["offload"]
        setting["offload"] = Offload(off["weights"], off["link"], units.parse(off["link"], "bandwidth"))
    typed = {"setting": Setting(**setting, order=tuple(setting))} if "setting" in raw else {}
    return Statement(**{**raw, **typed}, order=tuple(raw))


def _change(doc: Document, raw: dict[str, Any]) -> dict[str, Any]:
    """The card's schema-valid change section, its scheduler's links in base units (checked already)."""
    if "scheduler" not in raw:
        return dict(raw)
    problems: list[Problem] = []
    return {**raw, "scheduler": traffic_mod.parse_links(doc, ("change", "scheduler"), problems)}


def from_document(doc: Document, catalog: catalog_mod.Catalog | None = None, strict_evidence: bool = False) -> Claim:
    """A parsed card document -> Claim, or UserError listing every problem (placeholders first: a schema
    complaint about a placeholder's type would only repeat it)."""
    left = placeholder_problems(doc)
    problems = left + [p for p in validate(doc, "claim") if p.path not in {q.path for q in left}]
    if problems:
        raise UserError(problems)
    problems, models = _semantic(doc, catalog or catalog_mod.load())
    problems += _evidence_problems(doc) + (strict(doc) if strict_evidence else [])
    if problems:
        raise UserError(problems)
    d = doc.data
    impl, quality, cost = d.get("implementation", {}), d.get("quality", {}), d.get("cost", {})
    if "stack" in d and "change" not in d:
        d = {**d, "change": {}}
    return Claim(
        id=d["id"], title=d["title"], direction=d["direction"], file=doc.file,
        change=change_mod.parse(_change(doc, d["change"]), d["change"]),
        paper=_paper(d.get("paper", {})), claim=_statement(d.get("claim", {})),
        kernel=impl.get("kernel", CARD_KERNEL),
        kernel_in=impl.get("kernel_in", "paper" if impl.get("kernel", CARD_KERNEL) else "none"),
        bandwidth_efficiency=impl.get("bandwidth_efficiency", CARD_EFFICIENCY),
        compute_efficiency=impl.get("compute_efficiency", CARD_EFFICIENCY),
        quality_retained=quality.get("retained"),
        figures=tuple(QualityFigure(f["kind"], f["task"], f["model"], float(f["baseline"]), float(f["claim"]),
                                    figure_params(f, catalog or catalog_mod.load(), models) or 0.0)
                      for f in quality.get("figures", [])),
        evaluated_on=tuple(quality.get("evaluated_on", ())),
        long_context_tested=quality.get("long_context_tested", CARD_LONG_CONTEXT_TESTED),
        gpus=cost.get("gpus"), weeks=cost.get("weeks"),
        requires=tuple(d.get("requires", ())), conflicts=tuple(d.get("conflicts", ())),
        models=models, evidence=dict(d.get("evidence", {})),
    )
