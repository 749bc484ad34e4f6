"""The building blocks of message schemas: a field with its type, versions, nullability and tag.

A compact notation for the field lists of Kafka's message definitions:
`f("acks", "int16")`, `f("transactional_id", "string", "3+", nullable=3)`, an array of structs as a
list of fields, `"[int32]"` for an array of a primitive, `Struct([...])` for a single struct, and
`tag=N` for a tagged field of flexible versions.
"""

from __future__ import annotations

from dataclasses import dataclass

PRIMITIVES = frozenset(
    {
        "int8", "int16", "uint16", "int32", "int64", "float64", "bool",
        "string", "bytes", "records", "uuid",
    }
)  # fmt: skip
NO_DEFAULT = object()


@dataclass(frozen=True, slots=True)
class Struct:
    """A single nested struct (not an array)."""

    fields: tuple[Field, ...]

    def __init__(self, fields) -> None:
        object.__setattr__(self, "fields", tuple(fields))


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    type: str
    """A primitive name, `[primitive]`, `[]` (array of `fields`) or `{}` (a struct of `fields`)."""
    fields: tuple[Field, ...]
    min_version: int
    max_version: int
    nullable_from: int | None
    tag: int | None
    default: object

    def present(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    def nullable(self, version: int) -> bool:
        return self.nullable_from is not None and version >= self.nullable_from

    def default_value(self, version: int):
        """What a missing value encodes as: the declared default, else null where nullable, else
        the type's zero."""
        if self.default is not NO_DEFAULT:
            return self.default
        if self.nullable(version):
            return None
        if self.type in ("[]",) or self.type.startswith("["):
            return []
        if self.type == "{}":
            return {}
        return {"string": "", "bytes": b"", "records": b"", "bool": False, "float64": 0.0}.get(
            self.type, 0
        )


def _versions(spec: str) -> tuple[int, int]:
    if spec.endswith("+"):
        return int(spec[:-1]), 1 << 15
    low, _, high = spec.partition("-")
    return int(low), int(high or low)


def f(
    name: str,
    type: str | list | Struct,
    versions: str = "0+",
    *,
    nullable: int | None = None,
    tag: int | None = None,
    default: object = NO_DEFAULT,
) -> Field:
    low, high = _versions(versions)
    if isinstance(type, list):
        kind, fields = "[]", tuple(type)
    elif isinstance(type, Struct):
        kind, fields = "{}", type.fields
    else:
        kind, fields = type, ()
        base = type[1:-1] if type.startswith("[") else type
        if base not in PRIMITIVES:
            raise ValueError(f"unknown type {type!r} of field {name}")
    return Field(name, kind, fields, low, high, nullable, tag, default)
