"""Safe, bounded YAML reading that remembers where every value came from.

One loader serves cards, workload files and catalogs: PyYAML's SafeLoader
(no python tags) with YAML 1.2 floats (``7.0e9`` and ``1e9`` are numbers,
not the strings YAML 1.1 makes of them), duplicate keys refused, alias
expansion and nesting bounded, file size capped, UTF-8 required.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..defaults import LIMITS
from ..errors import Problem, UserError, valid_text
from .files import read_text

MAX_BYTES = LIMITS.file_bytes
MAX_NODES = LIMITS.yaml_nodes
MAX_DEPTH = LIMITS.nesting

Path_ = tuple[Any, ...]


class _StrictConstructor:
    """Refuses duplicate keys and unhashable keys, addressed by their mark, and a tagged value its tag cannot
    read (``!!int 0b101``, ``!!float abc``, ``!!timestamp bogus``): an error at the value, never its text."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)  # type: ignore[misc]
        except (ValueError, TypeError, AttributeError, LookupError, ArithmeticError):
            tag = node.tag.rsplit(":", 1)[-1] if node.tag.startswith("tag:yaml.org,2002:") else "its tag"
            raise yaml.constructor.ConstructorError(
                None, None, f"a value its tag ({tag}) cannot read", node.start_mark) from None

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if not isinstance(node, yaml.MappingNode):             # a mapping's tag (!!set, !!map) on a scalar
            raise yaml.constructor.ConstructorError(None, None, "expected a mapping for its tag", node.start_mark)
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                raise yaml.constructor.ConstructorError(
                    None, None, "a mapping key must be text", key_node.start_mark) from None
            if key in seen:
                first = seen[key].start_mark
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key (first at line {first.line + 1})", key_node.start_mark)
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)  # type: ignore[misc]


class _CountingComposer:
    """Counts nodes as the parser composes them, so a huge flat document is refused while it is read, not after."""

    _nodes = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._nodes += 1
        if self._nodes > MAX_NODES:
            mark = self.peek_event().start_mark  # type: ignore[attr-defined]
            raise _TooMany(mark)
        return super().compose_node(parent, index)  # type: ignore[misc]


class _TooMany(Exception):
    def __init__(self, mark: Any) -> None:
        self.mark = mark


_FLOAT_1_2 = re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                 |[-+]?(?:[0-9][0-9_]*)[eE][-+]?[0-9]+
                 |[-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?
                 |[-+]?\.(?:inf|Inf|INF)
                 |\.(?:nan|NaN|NAN))$""", re.X)


_INT_1_2 = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")


def _construct_int_1_2(loader: Any, node: yaml.ScalarNode) -> int:
    """YAML 1.2 core integers: 010 is ten (not octal 8), 0o10 is eight, 0x10 sixteen; 1:30 is text."""
    text = loader.construct_scalar(node)
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text, 10)


def _loader_class(base: Any) -> Any:
    """``base`` (a safe loader) with strict mappings and the YAML 1.2 core schema's numbers: 7.0e9 and 1e9 are
    floats, 010 is ten, 1:30 and 1_000 are text (YAML 1.1 read them as 8, 90 and 1000)."""
    cls: Any = type(f"Strict{base.__name__}", (_CountingComposer, _StrictConstructor, base), {})
    cls.yaml_implicit_resolvers = {
        ch: [r for r in rs if r[0] not in ("tag:yaml.org,2002:float", "tag:yaml.org,2002:int",
                                           "tag:yaml.org,2002:timestamp")]        # YAML 1.2: a date is text
        for ch, rs in base.yaml_implicit_resolvers.items()
    }
    cls.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_1_2, list("-+0123456789."))
    cls.add_implicit_resolver("tag:yaml.org,2002:int", _INT_1_2, list("-+0123456789"))
    cls.yaml_constructors = {**base.yaml_constructors, "tag:yaml.org,2002:int": _construct_int_1_2}
    return cls


# User input goes through the pure-Python parser, whose messages name the offending
# character; the shipped catalog (trusted, tested) through libyaml when present.
_Loader = _loader_class(yaml.SafeLoader)
_TrustedLoader = _loader_class(getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@dataclass
class Document:
    """Parsed data plus the line:col of every value and key, by JSON path (a trusted file's are read from its
    parse tree when first asked for: only a message needs them)."""

    file: str
    data: Any
    values: dict[Path_, tuple[int, int]] = field(default_factory=dict)
    keys: dict[Path_, tuple[int, int]] = field(default_factory=dict)
    node: yaml.Node | None = field(default=None, repr=False, compare=False)

    def where(self, path: Path_, key: bool = False) -> tuple[int, int]:
        """Line and column of ``path`` (its key when ``key``), else of its nearest ancestor."""
        if self.node is not None:
            node, self.node = self.node, None
            _positions(node, (), self)
        table = self.keys if key and path in self.keys else self.values
        while path and path not in table:
            path = path[:-1]
            table = self.values
        return table.get(path, (1, 1))

    def problem(self, path: Path_, message: str, key: bool = False, at: Path_ | None = None,
                near: tuple[str, Iterable[str]] | None = None) -> Problem:
        """A Problem printed at ``path`` and pointing at ``at`` (default ``path``; its key when ``key``): an
        unknown key is blamed on its mapping, so the key itself is never printed. ``near``: (a name, the names
        it may mean), the suggestion at NEAR in ``message``, searched only if the problem is shown."""
        line, col = self.where(path if at is None else at, key)
        return Problem(self.file, line, col, json_path(path), message, near)   # the names referred to, not copied


# a key printed in a path: a name of the shape triage's own keys and names have; any other key (a line of a
# file that is no YAML of triage's: 'root:$6$…') is printed as [?]
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,63}")


def json_path(path: Path_) -> str:
    """('change', 'kv_bytes') -> '$.change.kv_bytes'; list indices as [i]; a key that is no name as [?]."""
    out = "$"
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if isinstance(part, str) and _NAME.fullmatch(part) else "[?]"
    return out


def _expanded_size(node: yaml.Node, memo: dict[int, int], depth: int = 0) -> int:
    """Node count with aliases expanded, memoized so a bomb is measured, not expanded."""
    if id(node) in memo:
        return memo[id(node)]
    if depth > MAX_DEPTH:
        raise _TooDeep(node)
    if isinstance(node, yaml.MappingNode):
        size = 1 + sum(_expanded_size(k, memo, depth + 1) + _expanded_size(v, memo, depth + 1)
                       for k, v in node.value)
    elif isinstance(node, yaml.SequenceNode):
        size = 1 + sum(_expanded_size(v, memo, depth + 1) for v in node.value)
    else:
        size = 1
    memo[id(node)] = size
    return size


class _TooDeep(Exception):
    def __init__(self, node: yaml.Node) -> None:
        self.node = node


def _positions(node: yaml.Node, path: Path_, doc: Document) -> None:
    doc.values[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode):
                child = path + (k.value,)
                doc.keys[child] = (k.start_mark.line + 1, k.start_mark.column + 1)
                _positions(v, child, doc)
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            _positions(v, path + (i,), doc)


MAX_INTEGER = 10**18


def _check_values(data: Any, path: Path_, doc: Document, problems: list[Problem]) -> None:
    """Refuse non-text keys, non-finite or absurd numbers and invalid Unicode anywhere in the document."""
    if isinstance(data, dict):
        for k, v in data.items():
            if not isinstance(k, str) or not valid_text(k):
                problems.append(doc.problem(path, "a key must be valid text"))
                continue
            _check_values(v, path + (k,), doc, problems)
    elif isinstance(data, list):
        for i, v in enumerate(data):
            _check_values(v, path + (i,), doc, problems)
    elif isinstance(data, bool):
        return
    elif isinstance(data, (bytes, bytearray)):
        problems.append(doc.problem(path, "binary data (!!binary) is not allowed"))
    elif isinstance(data, float) and not math.isfinite(data):
        problems.append(doc.problem(path, f"expected a finite number, got {data}"))
    elif isinstance(data, int) and abs(data) > MAX_INTEGER:
        problems.append(doc.problem(path, "integer too large (more than 1e18)"))
    elif isinstance(data, str) and not valid_text(data):
        problems.append(doc.problem(path, "text with a lone surrogate is not valid Unicode"))


# what PyYAML quotes in a message: a character ('\t'), a token (',' or '<stream end>'), or the file's own text
# (a tag, an alias or anchor name); the last is left out
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'" r'|"(?:[^"\\]|\\.)*"')
_SAFE_QUOTE = re.compile(r"""(['"])(?:.|\\(?:x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8}|.)|<[a-z ]+>)\1""")


def _parser_message(exc: yaml.MarkedYAMLError) -> str:
    """PyYAML's context and problem, without the file's text (never its snippet, nor a quoted tag or name)."""
    what = " ".join(x for x in (exc.context, exc.problem) if x) or "invalid YAML"
    if "could not determine a constructor for the tag" in what:
        return "tag not allowed (safe YAML only)"
    return _QUOTED.sub(lambda m: m.group() if _SAFE_QUOTE.fullmatch(m.group()) else "(text left out)", what)


def load(text: str, file: str, trusted: bool = False) -> Document:
    """Parse YAML text into a Document, or raise UserError with every position known.

    ``trusted`` (shipped package data) parses with libyaml and skips the walks that guard against hostile text
    (alias bombs, non-text keys, absurd numbers): the package's own files, held to those rules by
    tests/io/test_yamlio.py, not at every start-up; their positions are read only if a message asks for one.
    """
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise UserError([Problem(file, path="", message=f"text is over the {MAX_BYTES // 1024} KiB limit")])
    loader = None
    try:
        loader = (_TrustedLoader if trusted else _Loader)(text)
        node = loader.get_single_node()
        if node is None:
            raise UserError([Problem(file, path="", message="file is empty, expected a YAML mapping")])
        if trusted:
            return Document(file, loader.construct_document(node), node=node)
        try:
            size = _expanded_size(node, {})
        except _TooDeep as deep:
            mark = deep.node.start_mark
            raise UserError([Problem(file, mark.line + 1, mark.column + 1, "$",
                                     f"nesting deeper than {MAX_DEPTH} levels")]) from None
        if size > MAX_NODES:
            raise UserError([Problem(file, 1, 1, "$", (
                f"document expands to {size:,} nodes (aliases included); the limit is {MAX_NODES:,}"))])
        data = loader.construct_document(node)
    except (ValueError, TypeError, AttributeError, LookupError, ArithmeticError):
        # a collection's tag builds its value after the walk (PyYAML's generator constructors): no mark left
        raise UserError([Problem(file, path="", message="YAML: a value its tag cannot read")]) from None
    except _TooMany as many:
        raise UserError([Problem(file, many.mark.line + 1, many.mark.column + 1, "$", (
            f"more than {MAX_NODES:,} YAML nodes; the limit is {MAX_NODES:,}"))]) from None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        col = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        raise UserError([Problem(file, line, col, "$", (
            f"YAML: character U+{exc.character:04X} is not allowed in YAML text"))]) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        raise UserError([Problem(file, line, col, "$", f"YAML: {_parser_message(exc)}")]) from None
    except yaml.YAMLError:
        raise UserError([Problem(file, path="", message="YAML: invalid YAML")]) from None
    except RecursionError:
        raise UserError([Problem(file, path="", message=f"nesting deeper than {MAX_DEPTH} levels")]) from None
    finally:
        if loader is not None:
            loader.dispose()
    doc = Document(file, data)
    _positions(node, (), doc)
    problems: list[Problem] = []
    _check_values(data, (), doc, problems)
    if problems:
        raise UserError(problems)
    return doc


def _plain(data: Any, depth: int = 0) -> Any:
    """The API's data as a YAML file would give it: numbers of any type (Decimal, Fraction, numpy scalars) as
    int or float, numpy booleans as bool, tuples as lists; so nothing foreign reaches the model or to_dict()."""
    if depth > MAX_DEPTH:
        raise RecursionError
    if isinstance(data, dict):
        return {k: _plain(v, depth + 1) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [_plain(v, depth + 1) for v in data]
    if getattr(data, "ndim", None) == 0 and hasattr(data, "item"):
        data = data.item()                                            # a numpy scalar: its Python value
    if data is None or isinstance(data, (bool, str, int)):
        return data
    # only the API's dicts come here: decimal loads for them, not on every start
    from decimal import Decimal

    if isinstance(data, (numbers.Real, Decimal)):
        try:
            return float(data)                                        # Decimal, Fraction
        except OverflowError:
            return math.inf                                           # refused as not finite, addressed
    return data


def document(label: str, data: Any) -> Document:
    """A Document of already-parsed data (the Python API's dicts), held to the same rules as a file: text
    keys, finite numbers (of any numeric type, made int or float first), bounded size and nesting."""
    problems: list[Problem] = []
    try:
        data = _plain(data)
        _check_values(data, (), Document(label, data), problems)
    except RecursionError:
        raise UserError([Problem(label, path="", message=f"nesting deeper than {MAX_DEPTH} levels")]) from None
    if problems:
        raise UserError(problems)
    return Document(label, data)


def load_file(path: Path | str, label: str | None = None, trusted: bool = False) -> Document:
    """Read and parse one YAML file (``label`` is how errors name it)."""
    label = label or str(path)
    return load(read_text(path, label, record=not trusted), label, trusted)
