"""`record`: the frozen dataclass every layer hands to the next, with its equality, hash and repr written once.

A `@dataclass(frozen=True)` compiles six methods per class at import (Python 3.11 execs each generated method's
source); triage defines about seventy such types, and compiling them was a fifth of `triage run`'s start-up.
A record compiles only its ``__init__`` (it depends on the fields' order and defaults) and shares the rest, with
the generated ones' meaning: equal when of the same class with equal compared fields; the hash of those fields;
``Name(field=value, …)``; and frozen — a field is set once, by ``__init__``, and never again, nor deleted
(docs/performance.md, start-up). Two differences, both refused or harmless here: a field with ``init=False``
must have no plain default (``__init__`` would never set it, so it could be set once later: `record` refuses
it), and a record's subclass is a record (``@dataclass(frozen=True)`` refuses to extend one: its params say
not frozen).
"""

from __future__ import annotations

import dataclasses
import reprlib
import sys
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
elif sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:                                    # Python 3.10: the marker is for type checkers only
    def dataclass_transform(**_: Any) -> Any:
        return lambda f: f

T = TypeVar("T", bound=type)
# each record class's field names, set on the class by ``record`` (no table of classes at module level)
_FIELDS, _COMPARED, _SHOWN, _OWN = "__record_fields__", "__record_compared__", "__record_shown__", "__record__"


def _values(self: Any) -> tuple[Any, ...]:
    return tuple(getattr(self, name) for name in getattr(type(self), _COMPARED))


def _eq(self: Any, other: object) -> bool:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return self is other or _values(self) == _values(other)


def _hash(self: Any) -> int:
    return hash(_values(self))


def _setattr(self: Any, name: str, value: Any) -> None:
    """Frozen after ``__init__``: it sets each field once (a field ``__post_init__`` computes is set with
    ``object.__setattr__``, as in a frozen dataclass); a plain subclass may set attributes of its own, as a
    frozen dataclass's may."""
    cls = type(self)
    field = name in getattr(cls, _FIELDS)
    if field and name in self.__dict__ or not field and cls.__dict__.get(_OWN, False):
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
    object.__setattr__(self, name, value)


def _delattr(self: Any, name: str) -> None:
    cls = type(self)
    if cls.__dict__.get(_OWN, False) or name in getattr(cls, _FIELDS):
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
    object.__delattr__(self, name)


@reprlib.recursive_repr()
def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in getattr(type(self), _SHOWN))
    return f"{type(self).__qualname__}({shown})"


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def record(cls: T) -> T:
    """A frozen dataclass whose ``__eq__``, ``__hash__`` and ``__repr__`` are the shared ones above; a method
    the class writes itself is kept, as a dataclass keeps it."""
    made: Any = dataclasses.dataclass(eq=False, repr=False)(cls)
    own = cls.__dict__
    if "__setattr__" in own or "__delattr__" in own:
        raise TypeError(f"a record is frozen: {cls.__name__} cannot define __setattr__ or __delattr__")
    late = [f.name for f in dataclasses.fields(made) if not f.init and f.default is not dataclasses.MISSING]
    if late:
        raise TypeError(f"{cls.__name__}.{late[0]}: a record's init=False field takes no plain default "
                        "(__init__ would not set it, so it could be set once later); compute it in __post_init__")
    # as a dataclass: a method the class writes is kept (a __hash__ of None only where it wrote no __eq__)
    eq, hashed, shown = "__eq__" in own, "__hash__" in own and (own["__hash__"] is not None or "__eq__" not in own), \
        "__repr__" in own
    fields = dataclasses.fields(made)
    setattr(made, _FIELDS, tuple(f.name for f in fields))
    setattr(made, _COMPARED, tuple(f.name for f in fields if f.compare))
    setattr(made, _SHOWN, tuple(f.name for f in fields if f.repr))
    setattr(made, _OWN, True)        # the class itself is a record (a plain subclass inherits the names only)
    made.__setattr__, made.__delattr__ = _setattr, _delattr
    if not eq:
        made.__eq__ = _eq
    if not hashed:
        made.__hash__ = _hash
    if not shown:
        made.__repr__ = _repr
    return made


# a field's metadata: made when the record is built, not written by the user (written() leaves it out)
DERIVED: dict[str, Any] = {"derived": True}


def written(value: Any) -> Any:
    """A record as its user wrote it: the fields set (not None), in its ``order`` where it keeps one, derived fields
    (metadata DERIVED) left out, nested records alike; a tuple as a list, anything else as it is."""
    if not (dataclasses.is_dataclass(value) and not isinstance(value, type)):
        return list(value) if isinstance(value, tuple) else value
    fields = {f.name: f for f in dataclasses.fields(value)}
    order = [n for n in getattr(value, "order", ()) if n in fields]
    out = {}
    for name in [*order, *(n for n in fields if n not in order)]:
        v = getattr(value, name)
        if v is not None and not fields[name].metadata.get("derived"):
            out[name] = written(v)
    return out
