"""The bus's commands and events as bytes, for a bus between processes.

Every command and event of :mod:`server.bus` is a frozen dataclass of strings, numbers,
enums, bytes, tuples, other such dataclasses and protocol messages. :func:`pack` turns a
list of them into one msgpack document and :func:`unpack` back, field by field: a
dataclass is a list of its class's tag and its fields' values, an enum its value, a
client's request its protocol encoding (read back with the strict client decoder, so
nothing unchecked enters the race tier on another node), a tuple a list. msgpack walks
the values itself and calls back only for a dataclass, an enum or a request; a field is
converted when read back only if its type asks for it.

How each field is read back is worked out once from the dataclasses' type hints, so a
field added to a bus dataclass travels without a change here (``tests/server/test_bus.py``
round-trips one of every kind).
"""

from __future__ import annotations

import dataclasses
import operator
import types
import typing
from collections.abc import Callable, Sequence
from enum import Enum
from typing import Any, Union

import msgpack

import protocol
from server import bus

#: Every dataclass that crosses the bus, in the order of their tags (append only: the
#: tag is a class's index, and nodes of one cluster must agree on it).
CLASSES: tuple[type[Any], ...] = (
    bus.Caller,
    bus.Request,
    bus.Attach,
    bus.Detach,
    bus.CheckExpiry,
    bus.ToSession,
    bus.ToFeed,
    bus.Deliver,
    bus.Refuse,
    bus.Follow,
    bus.Unfollow,
    bus.Done,
    bus.ExpiryChecked,
    bus.TakeRace,
)

_TAGS: dict[type[Any], int] = {cls: tag for tag, cls in enumerate(CLASSES)}

Read = Callable[[Any], Any]


def _plain(value: Any) -> Any:
    return value


def _nested(value: Any) -> Any:
    return None if value is None else _unpack_one(value)


def _request(value: Any) -> Any:
    return protocol.decode_client(value)


def _tuple(value: Any) -> Any:
    return tuple(value)


def _reader(hint: Any) -> Read:
    """How a field with type ``hint`` is read back from its packed value."""
    options: tuple[Any, ...] = (hint,)
    if typing.get_origin(hint) in (Union, types.UnionType):
        options = tuple(arg for arg in typing.get_args(hint) if arg is not type(None))
    if all(option in _TAGS for option in options):
        return _nested
    if any(hasattr(option, "TYPE") for option in options):  # a client's request
        return _request
    if len(options) == 1:
        (only,) = options
        if isinstance(only, type) and issubclass(only, Enum):
            enum: type[Enum] = only
            return lambda value: None if value is None else enum(value)
        if typing.get_origin(only) is tuple:
            return _tuple
    return _plain


_READERS: dict[type[Any], tuple[Read, ...]] = {
    cls: tuple(
        _reader(typing.get_type_hints(cls, vars(bus))[item.name])
        for item in dataclasses.fields(cls)
    )
    for cls in CLASSES
}
#: For each class, its fields that are not read back as they are (by index), and how.
_CONVERTED: dict[type[Any], tuple[tuple[int, Read], ...]] = {
    cls: tuple((index, read) for index, read in enumerate(readers) if read is not _plain)
    for cls, readers in _READERS.items()
}


def _getter(cls: type[Any]) -> Callable[[Any], tuple[Any, ...]]:
    """Each of ``cls``'s fields' values, in order, as one tuple (one field's too)."""
    names = [item.name for item in dataclasses.fields(cls)]
    get = operator.attrgetter(*names)
    if len(names) > 1:
        return get
    return lambda value: (get(value),)


_FIELDS = {cls: _getter(cls) for cls in CLASSES}


def _packed(value: Any) -> Any:
    """What msgpack packs in place of a value it cannot pack itself (its ``default``):
    msgpack packs strings, numbers, bytes, ``None`` and tuples (as lists) on its own,
    and calls this for the rest, packing what it returns in turn."""
    kind = type(value)
    tag = _TAGS.get(kind)
    if tag is not None:
        return [tag, *_FIELDS[kind](value)]
    if isinstance(value, Enum):
        return value.value
    if hasattr(value, "TYPE"):  # a protocol message
        return protocol.encode(value)
    raise TypeError(f"a {kind.__name__} cannot cross the bus")


def _unpack_one(packed: Any) -> Any:
    tag, *values = packed
    cls = CLASSES[tag]
    if len(values) != len(_READERS[cls]):
        raise IndexError(f"{cls.__name__} takes {len(_READERS[cls])} fields")
    for index, read in _CONVERTED[cls]:
        values[index] = read(values[index])
    return cls(*values)


def pack(items: Sequence[bus.Command | bus.Event]) -> bytes:
    """Commands or events, in order, as one msgpack document."""
    data: bytes = msgpack.packb(items, default=_packed, use_bin_type=True)
    return data


def unpack(data: bytes) -> list[Any]:
    """What :func:`pack` packed. Raises ``ValueError`` (or a :class:`protocol.ProtocolError`,
    itself a ``ValueError``) for a document it did not make."""
    try:
        items = msgpack.unpackb(data, raw=False)
        return [_unpack_one(item) for item in items]
    except (TypeError, IndexError, KeyError, msgpack.UnpackException) as error:
        raise ValueError(f"not a packed bus document ({type(error).__name__})") from None
