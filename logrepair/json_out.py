"""A command's JSON as `json.dumps(data, indent=1)` writes it, with parts rendered elsewhere.

At thousands of partitions most of a command's JSON is per partition (verify's entry of each
partition, a repair's actions), and rendering it was most of what the one process that prints did
after the scan. Rendered beside each partition's scan (in whichever process scanned it,
`logrepair.pool`), that text only has to be joined: `Rendered` holds one value's text, and `dumps`
writes the items of a top-level list that holds some as they are, each at its place's indent, the
bytes `json.dumps` writes (a test holds the two equal)."""

from __future__ import annotations

import json


class Rendered(str):
    """One value's JSON text, as `json.dumps(value, indent=1)` writes it on its own."""

    @classmethod
    def of(cls, value: object) -> Rendered:
        return cls(json.dumps(value, indent=1))


def dumps(data: dict) -> str:
    """`json.dumps(data, indent=1)`, the `Rendered` items of its top-level lists as they are."""
    lists = {}
    shell = {}
    for key, value in data.items():
        if isinstance(value, list) and any(isinstance(item, Rendered) for item in value):
            marker = f"\0rendered {len(lists)}"
            lists[json.dumps(marker)] = value
            value = marker
        shell[key] = value
    text = json.dumps(shell, indent=1)
    for marker, items in lists.items():
        if text.count(marker) != 1:  # the data holds the marker's text: render it all here
            return json.dumps({k: _plain(v) for k, v in data.items()}, indent=1)
        rendered = (item if isinstance(item, Rendered) else Rendered.of(item) for item in items)
        joined = ",\n  ".join(item.replace("\n", "\n  ") for item in rendered)
        before, _, after = text.partition(marker)
        text = f"{before}[\n  {joined}\n ]{after}"
    return text


def _plain(value: object) -> object:
    if isinstance(value, list):
        return [json.loads(item) if isinstance(item, Rendered) else item for item in value]
    return value
