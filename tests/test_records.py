"""`record` means what `@dataclass(frozen=True)` means: the reference here is the standard library's own
generated methods on the same class body."""

import dataclasses
from dataclasses import field

import pytest

from triage.records import record


def _body():
    class Point:
        x: float
        y: float = 0.0
        tags: tuple[str, ...] = ()
        cache: list[int] = field(default_factory=list, compare=False, repr=False)

    return Point


Rec = record(_body())
Ref = dataclasses.dataclass(frozen=True)(_body())


@pytest.mark.parametrize("a,b", [
    ((1.0, 2.0, ("a",)), (1.0, 2.0, ("a",))),
    ((1.0, 2.0, ("a",)), (1.0, 3.0, ("a",))),
    ((0.0,), (-0.0,)),                       # equal floats, one hash
    ((float("nan"),), (float("nan"),)),      # nan: unequal unless the same object, as tuples compare
])
def test_equality_hash_and_repr_are_the_dataclass_ones(a, b):
    assert (Rec(*a) == Rec(*b)) == (Ref(*a) == Ref(*b))
    assert (hash(Rec(*a)) == hash(Rec(*b))) == (hash(Ref(*a)) == hash(Ref(*b)))
    assert repr(Rec(*a)).replace("Point", "") == repr(Ref(*a)).replace("Point", "")


def test_a_field_left_out_of_comparison_is_left_out_of_equality_hash_and_repr():
    one, two = Rec(1.0, cache=[1]), Rec(1.0, cache=[2])
    assert one == two and hash(one) == hash(two)
    assert "cache" not in repr(one)
    assert repr(one).endswith("Point(x=1.0, y=0.0, tags=())")


def test_frozen_and_typed_like_a_dataclass():
    p = Rec(1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 2.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        del p.y
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.other = 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        Ref(1.0).other = 1                   # what the reference does
    assert dataclasses.replace(p, y=5.0) == Rec(1.0, 5.0)
    assert Rec(1.0) != Ref(1.0) and Rec(1.0).__eq__(Ref(1.0)) is NotImplemented     # another class: not equal
    assert {Rec(1.0): "a"}[Rec(1.0)] == "a"


def test_a_method_the_class_writes_is_kept():
    @record
    class Named:
        name: str

        def __repr__(self) -> str:
            return f"<{self.name}>"

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Named) and self.name.lower() == other.name.lower()

        def __hash__(self) -> int:
            return hash(self.name.lower())

    assert repr(Named("A")) == "<A>" and Named("A") == Named("a") and hash(Named("A")) == hash(Named("a"))


def test_a_field_computed_after_init_is_set_as_a_frozen_dataclass_sets_it():
    @record
    class Total:
        parts: tuple[float, ...]
        total: float = field(init=False)

        def __post_init__(self) -> None:
            object.__setattr__(self, "total", sum(self.parts))

    t = Total((1.0, 2.0))
    assert t.total == 3.0 and t == Total((1.0, 2.0))
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.total = 4.0


def test_what_a_frozen_dataclass_allows_or_refuses_a_record_does_too():
    class Plain(Rec):                        # a plain subclass sets attributes of its own, fields never
        pass

    class PlainRef(Ref):
        pass

    for cls in (Plain, PlainRef):
        p = cls(1.0)
        p.note = "mine"
        assert p.note == "mine"
        with pytest.raises(dataclasses.FrozenInstanceError):
            p.x = 2.0

    @record
    class Unhashable:
        x: int
        __hash__ = None                      # written: kept, as a dataclass keeps it

    with pytest.raises(TypeError):
        hash(Unhashable(1))
    with pytest.raises(TypeError, match="init=False field takes no plain default"):
        @record
        class Late:
            x: int
            y: int = field(default=0, init=False)

    loop = Rec(1.0, cache=[])
    loop.cache.append(loop)
    ref = Ref(1.0, cache=[])
    ref.cache.append(ref)
    assert repr(Rec(1.0, tags=(loop,))).replace("Point", "") == repr(Ref(1.0, tags=(ref,))).replace("Point", "")
