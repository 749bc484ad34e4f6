"""The commands' `--json` text: exactly what `json.dumps(data, indent=1)` writes, faster, with
parts rendered elsewhere.

With `indent`, the standard library encodes in pure Python, a generator step per value (~10 µs a
partition at thousands of partitions). `dumps` writes the same text with the C string encoder and
one list of pieces. Most of a command's JSON is per partition (verify's entry of each partition, a
repair's actions and losses); rendered beside each partition's scan (in whichever process scanned
it, `logrepair.pool`), that text only has to be placed: `Rendered` holds one value's text, written
at its place's indent. A value of any type other than JSON's own (dict with str keys, list, tuple,
str, int, float, bool, None) sends the whole document to `json.dumps`, so the text is always the
standard library's. Property tests hold the two equal.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii

_CONSTANTS = {None: "null", True: "true", False: "false"}


class Rendered(str):
    """One value's JSON text, as `json.dumps(value, indent=1)` writes it on its own."""

    @classmethod
    def of(cls, value: object) -> Rendered:
        return cls(dumps(value))


def dumps(data: object) -> str:
    """`json.dumps(data, indent=1)`, each `Rendered` value in it as it was rendered."""
    out: list[str] = []
    try:
        _value(data, out, "\n")
    except _NotPlain:
        return json.dumps(_parsed(data), indent=1)
    return "".join(out)


class _NotPlain(Exception):
    """A value the standard library's encoder would treat otherwise (or refuse)."""


def _value(value: object, out: list[str], newline: str) -> None:
    kind = value.__class__
    if kind is str:
        out.append(encode_basestring_ascii(value))
    elif kind is int:
        out.append(int.__repr__(value))
    elif value is None or value is True or value is False:
        out.append(_CONSTANTS[value])
    elif kind is dict:
        if not value:
            out.append("{}")
            return
        inner = newline + " "
        separator = "{" + inner
        for key, item in value.items():
            if key.__class__ is not str:
                raise _NotPlain
            out.append(separator)
            out.append(encode_basestring_ascii(key))
            out.append(": ")
            _value(item, out, inner)
            separator = "," + inner
        out.append(newline + "}")
    elif kind is list or kind is tuple:
        if not value:
            out.append("[]")
            return
        inner = newline + " "
        separator = "[" + inner
        for item in value:
            out.append(separator)
            _value(item, out, inner)
            separator = "," + inner
        out.append(newline + "]")
    elif kind is Rendered:
        out.append(value.replace("\n", newline))  # (rendered at no indent: moved to this one)
    elif kind is float:
        out.append(json.dumps(value))
    else:
        raise _NotPlain


def _parsed(value: object) -> object:
    """`value` with each `Rendered` in it parsed back, for the standard library's encoder."""
    if isinstance(value, Rendered):
        return json.loads(value)
    if isinstance(value, dict):
        return {key: _parsed(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_parsed(item) for item in value]
    return value


class Prerendered:
    """A report entry whose output can be made beside its partition's scan, in the process that
    scanned it (`logrepair.pool`), and only joined where it is printed. The class has `rendered`
    (`Rendered | None`) and `line` (`str | None`) fields, `to_json()` and `describe()`."""

    __slots__ = ()

    def prerender(self, as_json: bool) -> None:
        """Its output made now: the JSON text for `--json`, else the line."""
        if as_json:
            self.rendered = Rendered.of(self.to_json())
        else:
            self.line = self.describe()

    def output_json(self) -> dict | Rendered:
        """`to_json()`, or its text when it was rendered already."""
        return self.to_json() if self.rendered is None else self.rendered

    def output_line(self) -> str:
        """`describe()`, made already beside the partition's scan or now."""
        return self.describe() if self.line is None else self.line
