"""`meta.properties` at a log dir's root (spec fmt §8.5): cluster, node and directory identity.

A Java properties file: read with `Properties.load(InputStream)` rules (ISO-8859-1, `\\uXXXX`
escapes, `=`/`:`/whitespace separators, `#`/`!` comments, backslash continuations), validated as
Kafka's `MetaProperties` does, with its messages.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from . import java_text
from .checkpoints import CheckpointError, read_small_file
from .disk import Disk
from .partition_metadata import uuid_from_string

VERSION_PROP = "version"
CLUSTER_ID_PROP = "cluster.id"
BROKER_ID_PROP = "broker.id"
NODE_ID_PROP = "node.id"
DIRECTORY_ID_PROP = "directory.id"

MIGRATING_DIRECTORY_ID = "AAAAAAAAAAAAAAAAAAAAAA"
UNASSIGNED_DIRECTORY_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
LOST_DIRECTORY_ID = "AAAAAAAAAAAAAAAAAAAAAg"
RESERVED_DIRECTORY_IDS = frozenset(
    {MIGRATING_DIRECTORY_ID, UNASSIGNED_DIRECTORY_ID, LOST_DIRECTORY_ID}
)
# String.trim() removes every character up to U+0020.
_JAVA_TRIM = "".join(map(chr, range(0x21)))


@dataclass(frozen=True, slots=True)
class MetaProperties:
    version: int
    cluster_id: str | None = None
    node_id: int | None = None
    """`node.id` for v1, `broker.id` for v0 (absent → None)."""
    directory_id: str | None = None

    def to_properties(self) -> dict[str, str]:
        props = {VERSION_PROP: str(self.version)}
        if self.cluster_id is not None:
            props[CLUSTER_ID_PROP] = self.cluster_id
        if self.node_id is not None:
            props[NODE_ID_PROP if self.version == 1 else BROKER_ID_PROP] = str(self.node_id)
        if self.directory_id is not None:
            props[DIRECTORY_ID_PROP] = self.directory_id
        return props


def meta_properties_from(props: dict[str, str]) -> MetaProperties:
    """`MetaProperties.Builder(props).build()`; ValueError with Kafka's messages."""
    version_text = props.get(VERSION_PROP, "0")
    try:
        version = java_text.parse_int(version_text.strip(_JAVA_TRIM))
    except ValueError:
        raise ValueError(f"Invalid meta.properties version string '{version_text}'") from None
    if version not in (0, 1):
        raise ValueError(f"Unknown meta.properties version number {version}")
    node_id = None
    if version == 0:
        if BROKER_ID_PROP in props:
            node_id = _required_int(props, BROKER_ID_PROP)
    else:
        node_id = _required_int(props, NODE_ID_PROP)
    cluster_id = props.get(CLUSTER_ID_PROP)
    directory_id = props.get(DIRECTORY_ID_PROP)
    if directory_id is not None:
        try:
            uuid_from_string(directory_id)
        except ValueError as e:
            raise ValueError(f"Unable to read {DIRECTORY_ID_PROP} as a Uuid: {e}") from None
    if version == 1 and cluster_id is None:
        raise ValueError("cluster.id was not found.")
    return MetaProperties(version, cluster_id, node_id, directory_id)


def _required_int(props: dict[str, str], key: str) -> int:
    value = props.get(key)
    if value is None:
        raise ValueError(f"Failed to find {key}")
    try:
        return java_text.parse_int(value)
    except ValueError:
        raise ValueError(f"Unable to read {key} as a base-10 number.") from None


def read_meta_properties(disk: Disk, path: str) -> MetaProperties:
    try:
        return meta_properties_from(parse_properties(read_small_file(disk, path)))
    except ValueError as e:
        raise CheckpointError(path, f"{e} ({path})") from None


def write_meta_properties(disk: Disk, path: str, meta: MetaProperties) -> None:
    """`PropertiesUtils.writePropertiesFile`: `.tmp`, fsync, atomic rename, directory fsync."""
    disk.write_file_atomic(path, format_properties(meta.to_properties()))


def format_properties(props: dict[str, str], now: float | None = None) -> bytes:
    """`Properties.store(writer, "")` on JDK 18+: a `#` line, a date line, keys in sorted order.

    Kafka stores through a UTF-8 writer but loads as ISO-8859-1; ids are ASCII, so both agree."""
    stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(now))
    lines = ["#", f"#{stamp}"]
    lines += [f"{_escape(k, True)}={_escape(v, False)}" for k, v in sorted(props.items())]
    return "".join(line + "\n" for line in lines).encode("utf-8")


def _escape(text: str, is_key: bool) -> str:
    """`Properties.saveConvert` (escUnicode false)."""
    out = []
    for i, c in enumerate(text):
        if c == " ":
            out.append("\\ " if i == 0 or is_key else " ")
        elif c in "\\=:#!":
            out.append("\\" + c)
        elif c in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[c])
        else:
            out.append(c)
    return "".join(out)


def parse_properties(data: bytes) -> dict[str, str]:
    """`Properties.load(InputStream)`: ISO-8859-1 bytes, Java's logical lines and escapes."""
    props: dict[str, str] = {}
    for line in _logical_lines(data.decode("latin-1")):
        key, value = _split_key_value(line)
        props[_unescape(key)] = _unescape(value)
    return props


def _logical_lines(text: str) -> list[str]:
    """Natural lines joined where a line ends in an odd number of backslashes; the continuation's
    leading whitespace dropped; blank and comment lines skipped."""
    out: list[str] = []
    pending: str | None = None
    for natural in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = natural.lstrip(" \t\f") if pending is not None else natural
        if pending is None:
            stripped = line.lstrip(" \t\f")
            if not stripped or stripped[0] in "#!":
                continue
            line = stripped
        backslashes = len(line) - len(line.rstrip("\\"))
        if backslashes % 2:
            pending = (pending or "") + line[:-1]
            continue
        out.append((pending or "") + line)
        pending = None
    if pending is not None:
        out.append(pending)
    return out


def _split_key_value(line: str) -> tuple[str, str]:
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c in "=: \t\f":
            break
        i += 1
    key = line[:i]
    rest = line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":") and (i < n and line[i] not in "=:"):
        rest = rest[1:].lstrip(" \t\f")
    elif i < n and line[i] in "=:":
        rest = line[i + 1 :].lstrip(" \t\f")
    return key, rest


def _unescape(text: str) -> str:
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        c = text[i + 1]
        if c == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise ValueError("Malformed \\uxxxx encoding.")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append({"t": "\t", "r": "\r", "n": "\n", "f": "\f"}.get(c, c))
        i += 2
    return "".join(out)
