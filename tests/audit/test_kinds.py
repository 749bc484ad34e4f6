"""Every finding kind the audit can emit is documented (README tables come from these lists)."""

from __future__ import annotations

import pathlib
import re

import logrepair.audit
from logrepair.audit import kinds as audit_kinds
from logrepair.recovery import defects


def test_every_kind_named_in_the_audit_is_documented():
    source = pathlib.Path(logrepair.audit.__file__).parent
    named = set()
    for path in source.glob("*.py"):
        named |= set(re.findall(r'Finding\(\s*"([a-z_]+)"', path.read_text()))
        named |= set(re.findall(r'^    \S+: "([a-z_]+_leftover)"', path.read_text(), re.M))
    assert {"recovery_point_beyond_end", "replica_diverged", "swap_leftover"} <= named
    undocumented = named - set(defects.KINDS) - set(audit_kinds.KINDS)
    assert not undocumented


def test_audit_kinds_do_not_shadow_scan_kinds():
    assert not set(audit_kinds.KINDS) & set(defects.KINDS)
    assert audit_kinds.kinds_markdown().count("\n| `") == len(audit_kinds.KINDS)
