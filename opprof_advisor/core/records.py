"""Record: the base of the plain data classes built on every command's path (models, gains, the readers' results).

They were dataclasses, whose decorator writes each class's methods with ``exec`` when the module is
imported and pulls in ``inspect`` (with ``ast``, ``dis`` and ``tokenize``): ~15 ms of a ~0.15 s
``advisor suggest``. A Record's ``__init__`` is written out in its class, compiled into the bytecode
like any function; the fields are the class's annotations, in order. What the dataclasses gave
stays the same: keyword or positional construction, ``==`` field by field between objects of one
class (and no hash), ``repr`` ``Name(field=value, ...)``, ``to_dict`` as ``dataclasses.asdict``
(records, lists, tuples and dicts inside are copied) and ``replace``. ``FrozenRecord`` refuses
attribute assignment and hashes by its fields, as a frozen dataclass does.
"""

from __future__ import annotations

from typing import Any


class Record:
    """A class whose annotated attributes are its fields (see the module's docstring)."""

    FIELDS: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.FIELDS = tuple(cls.__dict__.get("__annotations__", {}))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # tuples, as the dataclasses compared (a NaN equals itself)

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.FIELDS)

    def __repr__(self) -> str:
        values = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.FIELDS)
        return f"{self.__class__.__qualname__}({values})"

    def to_dict(self) -> dict[str, Any]:
        """The fields as a dict, records inside turned into dicts and containers copied (``dataclasses.asdict``)."""
        return {name: plain(getattr(self, name)) for name in self.FIELDS}

    def replace(self, **changes: Any) -> Any:
        """A new record with ``changes`` applied to this one's fields (``dataclasses.replace``)."""
        return self.__class__(**{**{name: getattr(self, name) for name in self.FIELDS}, **changes})


class FrozenRecord(Record):
    """A Record whose fields cannot be reassigned once built; hashable by its fields."""

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r} of a frozen {self.__class__.__name__}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r} of a frozen {self.__class__.__name__}")

    def __hash__(self) -> int:
        return hash(self._values())

    __eq__ = Record.__eq__


def plain(value: Any) -> Any:
    """``value`` with every record inside turned into a dict and its lists, tuples and dicts copied."""
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return type(value)((plain(key), plain(item)) for key, item in value.items())
    if isinstance(value, tuple):
        items = [plain(item) for item in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    return value
