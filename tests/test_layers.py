"""The package's layers: the import-linter contract holds, and no module imports itself through others."""

import subprocess
import sys
from pathlib import Path

import grimp

from conftest import ROOT


def test_the_import_contract_holds():
    lint = Path(sys.executable).parent / "lint-imports"
    proc = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 kept, 0 broken" in proc.stdout


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_no_import_cycles_between_modules():
    # every import statement counts, function-level and TYPE_CHECKING ones included, and a package's imports of
    # its own modules too (an __init__ that imports a module importing it back is a cycle): nothing is removed
    graph = grimp.build_graph("triage", include_external_packages=False)
    assert _cycles(graph) == []


def test_a_planted_cycle_through_a_package_is_found():
    # the serving engine once imported its policies package for a type hint while each policy imported the
    # engine: engine -> policies (the package) -> policies.base -> engine. Planted again, it is found.
    graph = grimp.build_graph("triage", include_external_packages=False)
    graph.add_import(importer="triage.serving.engine", imported="triage.serving.policies")
    (cycle,) = _cycles(graph)
    assert {"triage.serving.engine", "triage.serving.policies", "triage.serving.policies.base"} <= set(cycle)
