"""Field specs: how each value looks on the wire, how it is checked, and how it is converted.

A message class is a frozen dataclass; :func:`register` attaches a spec to each of its
fields. Decoding walks the specs and raises :class:`ProtocolError` with the dotted path
of the first bad field (``create_race.options.max_racers``); encoding turns value types
(cards, enums, nested dataclasses, tuples) back into plain msgpack values.

A field whose dataclass default is not ``MISSING`` may be left out on the wire and takes
that default; a field whose default is ``None`` is left out when it is ``None``.
"""

from __future__ import annotations

import re
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import MISSING, dataclass, fields
from enum import Enum
from typing import Any

from engine import Adjacency, Card, Ruleset
from protocol.errors import ErrorCode, ProtocolError

#: How many characters of a string an error sentence or a log line may quote: fewer than
#: 8, so that even a secret sent in the wrong field (or a token sent with a typo, where
#: it fails its own checks) never shows a fragment worth guessing from.
QUOTED_CHARACTERS = 7
#: Strings shaped like the protocol's own words (types, fields, choices, short sentences:
#: lowercase letters, ``_`` and spaces) are quoted whole. Tokens are URL-safe base64 or
#: hex, mixing digits and (for base64) capitals, so none is shaped like this.
_WORDS = re.compile(r"[a-z][a-z_ ]{0,39}")


def show(value: object) -> str:
    """A short description of a wire value for an error sentence or a log line.

    This is the one place where what a client sent is quoted. It never quotes the whole
    of a long value, and of a string no more than :data:`QUOTED_CHARACTERS` characters
    unless the string is made of lowercase words (a mistyped field or message type).
    Values of secret fields (:attr:`Spec.secret`) are never passed to it.

    >>> show("K7QX"), show("create_tournamnet")
    ("'K7QX'", "'create_tournamnet'")
    >>> show("q8V7hK2mZyX0pL4tR9wE1A=")
    "a string of 23 characters starting 'q8V7hK2'"
    """
    if value is None:
        return "nil"
    if value is True or value is False:
        return "true" if value else "false"
    if type(value) is int:
        text = str(value)
        return text if len(text) <= 24 else f"an integer of {len(text)} digits"
    if isinstance(value, float):
        return f"a float ({value!r})"
    if isinstance(value, str):
        if len(value) <= QUOTED_CHARACTERS or _WORDS.fullmatch(value):
            return repr(value)
        return f"a string of {len(value)} characters starting {value[:QUOTED_CHARACTERS]!r}"
    if isinstance(value, bytes | bytearray):
        return f"{len(value)} bytes of binary data"
    if isinstance(value, list | tuple):
        return f"an array of {len(value)} items"
    if isinstance(value, dict):
        return f"a map of {len(value)} keys"
    return f"a value of type {type(value).__name__}"


_UNNAMED = {"Cc": "a control character", "Co": "private use", "Cs": "a surrogate"}


def character(char: str) -> str:
    """One character by its code point and name, never quoted: ``U+3164 HANGUL FILLER``,
    ``U+000A (a control character)``."""
    name = unicodedata.name(char, None)
    if name is None:
        name = f"({_UNNAMED.get(unicodedata.category(char), 'unassigned')})"
    return f"U+{ord(char):04X} {name}"


def bad(where: str, expected: str, value: object) -> ProtocolError:
    """The error for a value that is not what ``where`` must be."""
    return ProtocolError(ErrorCode.BAD_MESSAGE, f"{where} must be {expected}, not {show(value)}")


class Spec(ABC):
    """One kind of wire value. ``wire`` describes it for the documentation."""

    wire: str = "any"
    #: Whether :meth:`encode` returns its argument unchanged (lets the encoder skip it).
    passthrough: bool = True
    #: Whether values of this kind are secrets (tokens): an error sentence about one says
    #: what is wrong with it but never quotes it, nor any part of it.
    secret: bool = False

    @abstractmethod
    def decode(self, value: object, where: str, strict: bool) -> Any:
        """Check ``value`` from the wire and return it as Python; raise ``ProtocolError``
        naming ``where`` if it is not what this spec allows (``strict``: refuse unknown
        fields, as the server does)."""

    def encode(self, value: Any) -> object:
        return value


class Int(Spec):
    def __init__(self, low: int, high: int) -> None:
        self.low, self.high = low, high
        self.wire = f"int {low}..{high}"

    def decode(self, value: object, where: str, strict: bool) -> Any:
        # type() rather than isinstance(): msgpack's booleans are Python bools, not ints.
        if type(value) is not int or not self.low <= value <= self.high:
            raise bad(where, f"an integer from {self.low} to {self.high}", value)
        return value


class Bool(Spec):
    wire = "bool"

    def decode(self, value: object, where: str, strict: bool) -> Any:
        if type(value) is not bool:
            raise bad(where, "true or false", value)
        return value


class Str(Spec):
    """A string of ``low``..``high`` characters, optionally matching ``pattern`` in full.

    ``text`` strings must be printable (no control characters, no line breaks) and have
    no leading or trailing spaces: names and other things shown to people.
    """

    def __init__(
        self, low: int, high: int, pattern: str | None = None, *, text: bool = False
    ) -> None:
        self.low, self.high, self.text = low, high, text
        self.pattern = re.compile(pattern) if pattern else None
        self.wire = f"str {low}..{high} chars" + (f" matching {pattern}" if pattern else "")
        if text:
            self.wire += ", printable"

    def decode(self, value: object, where: str, strict: bool) -> Any:
        if type(value) is not str or not self.low <= len(value) <= self.high:
            raise bad(where, f"a string of {self.low} to {self.high} characters", value)
        if self.pattern is not None and self.pattern.fullmatch(value) is None:
            raise bad(where, f"a string matching {self.pattern.pattern}", value)
        if self.text and (not value.isprintable() or value.strip() != value):
            raise bad(where, "printable text without leading or trailing spaces", value)
        return value


class Token(Spec):
    """A secret token: ``low``..``high`` URL-safe characters (A-Z, a-z, 0-9, ``_``, ``-``).

    The one kind of value that is never quoted: a token sent with a small mistake (a
    trailing ``=``, a space, quotes) is still the secret, so its refusal says only what is
    wrong. Mark every secret field with this spec; the refusal follows by construction.

    >>> try:
    ...     Token(16, 128).decode("q8V7hK2mZyX0pL4tR9wE1A=", "hello.resume", True)
    ... except ProtocolError as error:
    ...     print(error.message.split(";")[0])
    hello.resume is not a token: it holds U+003D EQUALS SIGN
    """

    secret = True
    _ALPHABET = re.compile(r"[A-Za-z0-9_-]*")

    def __init__(self, low: int, high: int) -> None:
        self.low, self.high = low, high
        self.wire = f"str {low}..{high} chars matching [A-Za-z0-9_-]+, secret"

    def decode(self, value: object, where: str, strict: bool) -> Any:
        if type(value) is not str:
            raise bad(where, "a token (a string)", value)
        wrong = self._what_is_wrong(value)
        if wrong is not None:
            raise ProtocolError(
                ErrorCode.BAD_MESSAGE,
                f"{where} is not a token: {wrong}; a token is {self.low} to {self.high} "
                "characters from A-Z, a-z, 0-9, _ and - (the value is not repeated)",
            )
        return value

    def _what_is_wrong(self, value: str) -> str | None:
        valid = self._ALPHABET.match(value)
        assert valid is not None  # the pattern matches the empty prefix
        if valid.end() < len(value):
            # The first character outside the alphabet is the mistake, not the secret.
            return f"it holds {character(value[valid.end()])}"
        if not self.low <= len(value) <= self.high:
            return f"it has {len(value)} characters"
        return None


class Choice(Spec):
    """One of an enum's string values, decoded to the enum member."""

    passthrough = False

    def __init__(self, enum: type[Enum]) -> None:
        self.enum = enum
        self.members: dict[object, Enum] = {m.value: m for m in enum}
        self.wire = " | ".join(f'"{v}"' for v in self.members)

    def decode(self, value: object, where: str, strict: bool) -> Any:
        if type(value) is not str or value not in self.members:
            raise bad(where, "one of " + ", ".join(map(repr, self.members)), value)
        return self.members[value]

    def encode(self, value: Any) -> object:
        return value.value


class Optional(Spec):
    """``nil`` or the inner spec."""

    def __init__(self, inner: Spec) -> None:
        self.inner = inner
        self.passthrough = inner.passthrough
        self.secret = inner.secret
        self.wire = f"{inner.wire} or nil"

    def decode(self, value: object, where: str, strict: bool) -> Any:
        return None if value is None else self.inner.decode(value, where, strict)

    def encode(self, value: Any) -> object:
        return None if value is None else self.inner.encode(value)


class Array(Spec):
    """An array of ``low``..``high`` items, decoded to a tuple."""

    passthrough = False

    def __init__(self, item: Spec, high: int, low: int = 0) -> None:
        self.item, self.low, self.high = item, low, high
        self.wire = f"array {low}..{high} of ({item.wire})"

    def decode(self, value: object, where: str, strict: bool) -> Any:
        if type(value) is not list or not self.low <= len(value) <= self.high:
            raise bad(where, f"an array of {self.low} to {self.high} items", value)
        item = self.item.decode
        return tuple([item(v, f"{where}[{i}]", strict) for i, v in enumerate(value)])

    def encode(self, value: Any) -> object:
        if self.item.passthrough:
            return value  # msgpack packs a tuple as the same array as a list
        item = self.item.encode
        return [item(v) for v in value]


class CardSpec(Spec):
    """A card as its id 0..39 (``Card.id``)."""

    wire = "card id, int 0..39"
    passthrough = False

    def decode(self, value: object, where: str, strict: bool) -> Any:
        if type(value) is not int or not 0 <= value <= 39:
            raise bad(where, "a card id from 0 to 39", value)
        return Card.from_id(value)

    def encode(self, value: Any) -> object:
        return value.id


#: Rows and columns run from -5 to 5: the first card is at (0, 0) and a grid is at most 6x6.
COORD_LOW, COORD_HIGH = -5, 5


class PositionSpec(Spec):
    """A grid position ``[row, col]``, decoded to a tuple."""

    wire = f"[row, col], ints {COORD_LOW}..{COORD_HIGH}"
    # A position is already a (row, col) tuple, which msgpack packs as the array [row, col].

    def decode(self, value: object, where: str, strict: bool) -> Any:
        if (
            type(value) is not list
            or len(value) != 2
            or type(value[0]) is not int
            or type(value[1]) is not int
            or not COORD_LOW <= value[0] <= COORD_HIGH
            or not COORD_LOW <= value[1] <= COORD_HIGH
        ):
            raise bad(where, f"[row, col] with integers from {COORD_LOW} to {COORD_HIGH}", value)
        return (value[0], value[1])


class RulesetSpec(Spec):
    """An engine :class:`Ruleset` as its ``to_dict`` map; missing keys take the defaults."""

    wire = "ruleset map"
    passthrough = False
    _fields: dict[str, Spec] = {  # noqa: RUF012 - read-only table
        "grid_size": Int(2, 6),
        "pile_capacity": Int(1, 10),
        "face_down_limit": Int(0, 36),
        "adjacency": Choice(Adjacency),
    }

    def decode(self, value: object, where: str, strict: bool) -> Any:
        if type(value) is not dict:
            raise bad(where, "a ruleset map", value)
        for key in value:
            if key not in self._fields and strict:
                raise ProtocolError(
                    ErrorCode.BAD_MESSAGE, f"{where} has an unknown field {show(key)}"
                )
        checked = {
            key: spec.decode(value[key], f"{where}.{key}", strict)
            for key, spec in self._fields.items()
            if key in value
        }
        try:
            return Ruleset(**checked)
        except ValueError as error:
            raise ProtocolError(ErrorCode.BAD_MESSAGE, f"{where}: {error}") from None

    def encode(self, value: Any) -> object:
        return value.to_dict()


@dataclass(frozen=True, slots=True)
class FieldDef:
    name: str
    spec: Spec
    required: bool
    omit_none: bool


@dataclass(frozen=True, slots=True)
class Schema:
    """The wire form of one dataclass: its fields in order, and whether it travels as an array."""

    cls: type[Any]
    fields: tuple[FieldDef, ...]
    as_array: bool
    check: Callable[[Any], str | None] | None
    names: frozenset[str]
    encode: Callable[[Any], Any]
    """The wire form of an instance (see :func:`encode_fields`)."""


SCHEMAS: dict[type[Any], Schema] = {}


def register(
    cls: type[Any],
    *,
    as_array: bool = False,
    check: Callable[[Any], str | None] | None = None,
    wire_required: tuple[str, ...] = (),
    **specs: Spec,
) -> None:
    """Attach a spec to every field of the dataclass ``cls``.

    ``check`` sees the built object and returns a sentence when fields disagree with each
    other (``min_racers`` above ``max_racers``). ``as_array`` sends the fields positionally
    as one array (used for small tuples such as flips and piles). ``wire_required`` names
    fields that a frame must carry even though Python code may leave them to their default.
    """
    defs = []
    for f in fields(cls):
        if f.name not in specs:
            raise TypeError(f"{cls.__name__}.{f.name} has no wire spec")
        required = f.name in wire_required or (
            f.default is MISSING and f.default_factory is MISSING
        )
        if as_array and not required:
            raise TypeError(f"{cls.__name__}.{f.name}: array-form fields are all required")
        defs.append(FieldDef(f.name, specs.pop(f.name), required, f.default is None))
    if specs:
        raise TypeError(f"{cls.__name__} has no field(s) {sorted(specs)}")
    SCHEMAS[cls] = Schema(
        cls,
        tuple(defs),
        as_array,
        check,
        frozenset(d.name for d in defs),
        _compile_encoder(defs, as_array),
    )


def decode_fields(
    schema: Schema, value: object, where: str, strict: bool, skip: frozenset[str] = frozenset()
) -> Any:
    """Build ``schema.cls`` from a wire map (or array, for array-form schemas)."""
    kwargs: dict[str, Any] = {}
    if schema.as_array:
        if type(value) is not list or len(value) != len(schema.fields):
            names = ", ".join(d.name for d in schema.fields)
            raise bad(where, f"an array [{names}]", value)
        for d, item in zip(schema.fields, value, strict=True):
            kwargs[d.name] = d.spec.decode(item, f"{where}.{d.name}", strict)
    else:
        if type(value) is not dict:
            raise bad(where, "a map", value)
        for d in schema.fields:
            if d.name in value:
                kwargs[d.name] = d.spec.decode(value[d.name], f"{where}.{d.name}", strict)
            elif d.required:
                raise ProtocolError(ErrorCode.BAD_MESSAGE, f"{where}.{d.name} is missing")
        if strict and len(value) != len(kwargs) + len(skip & value.keys()):
            for key in value:
                if key not in schema.names and key not in skip:
                    raise ProtocolError(
                        ErrorCode.BAD_MESSAGE, f"{where} has an unknown field {show(key)}"
                    )
    obj = schema.cls(**kwargs)
    if schema.check is not None:
        problem = schema.check(obj)
        if problem is not None:
            raise ProtocolError(ErrorCode.BAD_MESSAGE, f"{where}: {problem}")
    return obj


def encode_fields(schema: Schema, obj: Any) -> Any:
    """The wire form of a dataclass instance: a map (or an array for array-form schemas).

    A field that is ``None`` is left out when its default is ``None``; a spec that is
    not a passthrough converts the value (a card to its id, an enum to its value).
    """
    return schema.encode(obj)


def _compile_encoder(defs: list[FieldDef], as_array: bool) -> Callable[[Any], Any]:
    """:func:`encode_fields` for one schema, as a function written out for its fields.

    Every message the server sends is encoded this way, several per move; a loop over
    the fields that asked each spec what to do cost about twice as much (as the
    ``dataclasses`` module writes out ``__init__``, for the same reason).
    """
    env: dict[str, Any] = {}
    body: list[str] = []
    items: list[str] = []
    for index, d in enumerate(defs):
        value = "v" if not as_array else f"obj.{d.name}"
        converted = value
        if not d.spec.passthrough:
            env[f"_encode{index}"] = d.spec.encode
            converted = f"_encode{index}({value})"
        if as_array:
            items.append(converted)  # array-form fields are all required: never None
            continue
        body.append(f"    v = obj.{d.name}")
        if d.omit_none:
            body.append(f"    if v is not None: out[{d.name!r}] = {converted}")
        elif d.spec.passthrough:
            body.append(f"    out[{d.name!r}] = v")
        else:
            body.append(f"    out[{d.name!r}] = None if v is None else {converted}")
    if as_array:
        source = f"def encode(obj):\n    return [{', '.join(items)}]\n"
    else:
        source = "def encode(obj):\n    out = {}\n" + "\n".join(body) + "\n    return out\n"
    exec(source, env)
    encode: Callable[[Any], Any] = env["encode"]
    return encode


class Struct(Spec):
    """A nested registered dataclass."""

    passthrough = False

    def __init__(self, cls: type[Any]) -> None:
        self.cls = cls
        self.wire = f"{cls.__name__} " + ("array" if SCHEMAS[cls].as_array else "map")
        self._encode = SCHEMAS[cls].encode

    def decode(self, value: object, where: str, strict: bool) -> Any:
        return decode_fields(SCHEMAS[self.cls], value, where, strict)

    def encode(self, value: Any) -> object:
        return self._encode(value)
