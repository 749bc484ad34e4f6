"""Classic consumer-group membership (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) for subscribe().

Kafka's `GroupCoordinator` state machine, reduced to one broker: a join starts a rebalance that
completes once every known member has rejoined (or its rebalance timeout passed, after the initial
delay for an empty group); the leader's SyncGroup hands out the assignments; a member that misses
heartbeats for its session timeout is removed. Membership lives in memory: after a reboot every
member gets UNKNOWN_MEMBER_ID and rejoins, as after a coordinator failover.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field

from logrepair.protocol.errors import ErrorCode

INITIAL_REBALANCE_DELAY_S = 0.1
"""Kafka's `group.initial.rebalance.delay.ms` is 3 s; a test broker waits less."""


@dataclass
class Member:
    member_id: str
    group_instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: list[tuple[str, bytes]]
    last_heartbeat: float = field(default_factory=time.monotonic)
    join: asyncio.Future | None = None
    sync: asyncio.Future | None = None
    assignment: bytes = b""


@dataclass
class Group:
    group_id: str
    state: str = "Empty"  # Empty PreparingRebalance CompletingRebalance Stable
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    rebalance: asyncio.TimerHandle | None = None
    pending: set[str] = field(default_factory=set)
    """Member ids handed out with MEMBER_ID_REQUIRED, not joined yet."""
    initial_delay: bool = False
    """The first rebalance of an empty group waits the initial delay for more members."""


class GroupMembership:
    def __init__(self) -> None:
        self.groups: dict[str, Group] = {}

    def group(self, group_id: str) -> Group:
        g = self.groups.get(group_id)
        if g is None:
            g = self.groups[group_id] = Group(group_id)
        return g

    def reset(self) -> None:
        """A reboot: every pending answer fails, every member is forgotten."""
        for g in self.groups.values():
            if g.rebalance is not None:
                g.rebalance.cancel()
            for m in g.members.values():
                for fut in (m.join, m.sync):
                    if fut is not None and not fut.done():
                        fut.cancel()
        self.groups.clear()

    # --- JoinGroup ------------------------------------------------------------------------------

    async def join(self, req: dict, version: int, client_id: str) -> dict:
        g = self.group(req["group_id"])
        member_id = req["member_id"]
        protocols = [(p["name"], p["metadata"]) for p in req["protocols"]]
        if g.protocol_type is not None and g.members and req["protocol_type"] != g.protocol_type:
            return _join_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
        if member_id and member_id not in g.members and member_id not in g.pending:
            return _join_error(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
        if not member_id:
            member_id = f"{client_id or 'member'}-{uuid.uuid4()}"
            if version >= 4:  # KIP-394: the id first, then the real join
                g.pending.add(member_id)
                return _join_error(ErrorCode.MEMBER_ID_REQUIRED, member_id)
        g.pending.discard(member_id)
        rebalance_timeout = req.get("rebalance_timeout_ms", -1)
        if rebalance_timeout < 0:
            rebalance_timeout = req["session_timeout_ms"]
        m = g.members.get(member_id)
        if m is None:
            m = g.members[member_id] = Member(
                member_id,
                req.get("group_instance_id"),
                req["session_timeout_ms"],
                rebalance_timeout,
                protocols,
            )
        else:
            m.protocols = protocols
        m.last_heartbeat = time.monotonic()
        g.protocol_type = req["protocol_type"]
        loop = asyncio.get_running_loop()
        if m.join is not None and not m.join.done():
            m.join.cancel()
        m.join = loop.create_future()
        self._prepare_rebalance(g)
        self._maybe_complete_join(g)
        return await m.join

    def _prepare_rebalance(self, g: Group) -> None:
        if g.state == "PreparingRebalance":
            return
        for m in g.members.values():  # an old generation's pending syncs end now
            if m.sync is not None and not m.sync.done():
                m.sync.set_result(_sync_error(ErrorCode.REBALANCE_IN_PROGRESS))
        delay = INITIAL_REBALANCE_DELAY_S if g.state == "Empty" else None
        g.state = "PreparingRebalance"
        timeout = max((m.rebalance_timeout_ms for m in g.members.values()), default=0) / 1000
        loop = asyncio.get_running_loop()
        if g.rebalance is not None:
            g.rebalance.cancel()
        g.rebalance = loop.call_later(
            delay if delay is not None else timeout, self._complete_join, g, True
        )
        g.initial_delay = delay is not None

    def _maybe_complete_join(self, g: Group) -> None:
        if g.initial_delay:
            return
        if all(m.join is not None and not m.join.done() for m in g.members.values()):
            self._complete_join(g, False)

    def _complete_join(self, g: Group, timer: bool) -> None:
        if g.state != "PreparingRebalance":
            return
        g.initial_delay = False
        if g.rebalance is not None:
            g.rebalance.cancel()
            g.rebalance = None
        for mid in [mid for mid, m in g.members.items() if m.join is None or m.join.done()]:
            del g.members[mid]  # did not rejoin in time
        if not g.members:
            g.state, g.leader, g.protocol_name = "Empty", None, None
            g.generation += 1
            return
        g.generation += 1
        g.state = "CompletingRebalance"
        if g.leader not in g.members:
            g.leader = next(iter(g.members))
        g.protocol_name = _choose_protocol(g)
        leader = g.members[g.leader]
        all_members = [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "metadata": dict(m.protocols).get(g.protocol_name, b""),
            }
            for m in g.members.values()
        ]
        for m in g.members.values():
            m.join.set_result(
                {
                    "error_code": 0,
                    "generation_id": g.generation,
                    "protocol_type": g.protocol_type,
                    "protocol_name": g.protocol_name,
                    "leader": leader.member_id,
                    "member_id": m.member_id,
                    "members": all_members if m is leader else [],
                }
            )
            m.join = None

    # --- SyncGroup, Heartbeat, LeaveGroup --------------------------------------------------------

    async def sync(self, req: dict) -> dict:
        g = self.groups.get(req["group_id"])
        m = g.members.get(req["member_id"]) if g else None
        if g is None or m is None:
            return _sync_error(ErrorCode.UNKNOWN_MEMBER_ID)
        if req["generation_id"] != g.generation:
            return _sync_error(ErrorCode.ILLEGAL_GENERATION)
        if g.state == "PreparingRebalance":
            return _sync_error(ErrorCode.REBALANCE_IN_PROGRESS)
        m.last_heartbeat = time.monotonic()
        if g.state == "Stable":
            return _synced(g, m)
        m.sync = asyncio.get_running_loop().create_future()
        if m.member_id == g.leader:
            given = {a["member_id"]: a["assignment"] for a in req["assignments"]}
            for other in g.members.values():
                other.assignment = given.get(other.member_id, b"")
            g.state = "Stable"
            for other in g.members.values():
                if other.sync is not None and not other.sync.done():
                    other.sync.set_result(_synced(g, other))
        return await m.sync

    def heartbeat(self, req: dict) -> ErrorCode:
        g = self.groups.get(req["group_id"])
        m = g.members.get(req["member_id"]) if g else None
        if g is None or m is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if req["generation_id"] != g.generation:
            return ErrorCode.ILLEGAL_GENERATION
        m.last_heartbeat = time.monotonic()
        if g.state == "PreparingRebalance":
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave(self, group_id: str, member_ids: list[str]) -> list[ErrorCode]:
        g = self.groups.get(group_id)
        out = []
        for mid in member_ids:
            m = g.members.pop(mid, None) if g else None
            out.append(ErrorCode.NONE if m is not None else ErrorCode.UNKNOWN_MEMBER_ID)
            if m is not None:
                if m.join is not None and not m.join.done():
                    m.join.set_result(_join_error(ErrorCode.UNKNOWN_MEMBER_ID, mid))
                if m.sync is not None and not m.sync.done():
                    m.sync.set_result(_sync_error(ErrorCode.UNKNOWN_MEMBER_ID))
        if g is not None and any(e == ErrorCode.NONE for e in out):
            self._membership_changed(g)
        return out

    def expire_sessions(self) -> None:
        now = time.monotonic()
        for g in list(self.groups.values()):
            gone = [
                mid
                for mid, m in g.members.items()
                if m.join is None and now - m.last_heartbeat > m.session_timeout_ms / 1000
            ]
            for mid in gone:
                m = g.members.pop(mid)
                if m.sync is not None and not m.sync.done():
                    m.sync.set_result(_sync_error(ErrorCode.UNKNOWN_MEMBER_ID))
            if gone:
                self._membership_changed(g)

    def _membership_changed(self, g: Group) -> None:
        if not g.members:
            if g.rebalance is not None:
                g.rebalance.cancel()
                g.rebalance = None
            g.state, g.leader, g.protocol_name = "Empty", None, None
            g.generation += 1
        elif g.state == "PreparingRebalance":
            self._maybe_complete_join(g)
        else:
            self._prepare_rebalance(g)

    def commit_allowed(self, group_id: str, generation: int, member_id: str) -> ErrorCode:
        """OffsetCommit's membership check; a generation below 0 is a simple (manual) commit."""
        if generation < 0:
            return ErrorCode.NONE
        g = self.groups.get(group_id)
        if g is None or member_id not in g.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation != g.generation:
            return ErrorCode.ILLEGAL_GENERATION
        if g.state == "PreparingRebalance":
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE


def _choose_protocol(g: Group) -> str:
    """The first protocol of the leader's list that every member supports."""
    common = None
    for m in g.members.values():
        names = {name for name, _ in m.protocols}
        common = names if common is None else common & names
    for name, _ in g.members[g.leader].protocols:
        if name in (common or ()):
            return name
    return g.members[g.leader].protocols[0][0]


def _synced(g: Group, m: Member) -> dict:
    return {
        "error_code": 0,
        "protocol_type": g.protocol_type,
        "protocol_name": g.protocol_name,
        "assignment": m.assignment,
    }


def _join_error(code: ErrorCode, member_id: str) -> dict:
    return {
        "error_code": int(code),
        "generation_id": -1,
        "protocol_name": "",
        "leader": "",
        "member_id": member_id,
        "members": [],
    }


def _sync_error(code: ErrorCode) -> dict:
    return {"error_code": int(code), "assignment": b""}
