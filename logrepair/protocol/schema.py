"""The APIs `logsim serve` speaks: their versions and field lists.

The field lists are in `messages`, transcribed from Kafka's message definitions. Each API's
`flexible_from` is the first version with compact strings/arrays and tagged fields; the request
header is then v2 and the response header v1, except ApiVersions' response header, always v0 (so
that a client can read the answer to a version it guessed).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .fields import Field, f
from .messages import (
    ADD_OFFSETS_TO_TXN_REQUEST,
    ADD_OFFSETS_TO_TXN_RESPONSE,
    ADD_PARTITIONS_TO_TXN_REQUEST,
    ADD_PARTITIONS_TO_TXN_RESPONSE,
    API_VERSIONS_REQUEST,
    API_VERSIONS_RESPONSE,
    END_TXN_REQUEST,
    END_TXN_RESPONSE,
    FETCH_REQUEST,
    FETCH_RESPONSE,
    FIND_COORDINATOR_REQUEST,
    FIND_COORDINATOR_RESPONSE,
    HEARTBEAT_REQUEST,
    HEARTBEAT_RESPONSE,
    INIT_PRODUCER_ID_REQUEST,
    INIT_PRODUCER_ID_RESPONSE,
    JOIN_GROUP_REQUEST,
    JOIN_GROUP_RESPONSE,
    LEAVE_GROUP_REQUEST,
    LEAVE_GROUP_RESPONSE,
    LIST_OFFSETS_REQUEST,
    LIST_OFFSETS_RESPONSE,
    METADATA_REQUEST,
    METADATA_RESPONSE,
    OFFSET_COMMIT_REQUEST,
    OFFSET_COMMIT_RESPONSE,
    OFFSET_FETCH_REQUEST,
    OFFSET_FETCH_RESPONSE,
    PRODUCE_REQUEST,
    PRODUCE_RESPONSE,
    SYNC_GROUP_REQUEST,
    SYNC_GROUP_RESPONSE,
    TXN_OFFSET_COMMIT_REQUEST,
    TXN_OFFSET_COMMIT_RESPONSE,
)

REQUEST_HEADER = [
    f("request_api_key", "int16"),
    f("request_api_version", "int16"),
    f("correlation_id", "int32"),
    f("client_id", "string", "1+", nullable=1),
]
RESPONSE_HEADER = [f("correlation_id", "int32")]


@dataclass(frozen=True, slots=True)
class Api:
    key: int
    name: str
    min_version: int
    max_version: int
    flexible_from: int
    request: tuple[Field, ...] = field(repr=False)
    response: tuple[Field, ...] = field(repr=False)

    def flexible(self, version: int) -> bool:
        return version >= self.flexible_from


def _api(key, name, low, high, flexible_from, request, response) -> Api:
    return Api(key, name, low, high, flexible_from, tuple(request), tuple(response))


# Served versions: Produce from v3 and Fetch from v4 (magic 2 batches only).
APIS: dict[int, Api] = {
    a.key: a
    for a in (
        _api(0, "Produce", 3, 9, 9, PRODUCE_REQUEST, PRODUCE_RESPONSE),
        _api(1, "Fetch", 4, 12, 12, FETCH_REQUEST, FETCH_RESPONSE),
        _api(2, "ListOffsets", 0, 7, 6, LIST_OFFSETS_REQUEST, LIST_OFFSETS_RESPONSE),
        _api(3, "Metadata", 0, 9, 9, METADATA_REQUEST, METADATA_RESPONSE),
        _api(8, "OffsetCommit", 0, 8, 8, OFFSET_COMMIT_REQUEST, OFFSET_COMMIT_RESPONSE),
        _api(9, "OffsetFetch", 0, 7, 6, OFFSET_FETCH_REQUEST, OFFSET_FETCH_RESPONSE),
        _api(10, "FindCoordinator", 0, 3, 3, FIND_COORDINATOR_REQUEST, FIND_COORDINATOR_RESPONSE),
        _api(11, "JoinGroup", 0, 7, 6, JOIN_GROUP_REQUEST, JOIN_GROUP_RESPONSE),
        _api(12, "Heartbeat", 0, 4, 4, HEARTBEAT_REQUEST, HEARTBEAT_RESPONSE),
        _api(13, "LeaveGroup", 0, 4, 4, LEAVE_GROUP_REQUEST, LEAVE_GROUP_RESPONSE),
        _api(14, "SyncGroup", 0, 5, 4, SYNC_GROUP_REQUEST, SYNC_GROUP_RESPONSE),
        _api(18, "ApiVersions", 0, 3, 3, API_VERSIONS_REQUEST, API_VERSIONS_RESPONSE),
        _api(22, "InitProducerId", 0, 4, 2, INIT_PRODUCER_ID_REQUEST, INIT_PRODUCER_ID_RESPONSE),
        _api(
            24,
            "AddPartitionsToTxn",
            0,
            3,
            3,
            ADD_PARTITIONS_TO_TXN_REQUEST,
            ADD_PARTITIONS_TO_TXN_RESPONSE,
        ),
        _api(
            25, "AddOffsetsToTxn", 0, 3, 3, ADD_OFFSETS_TO_TXN_REQUEST, ADD_OFFSETS_TO_TXN_RESPONSE
        ),
        _api(26, "EndTxn", 0, 3, 3, END_TXN_REQUEST, END_TXN_RESPONSE),
        _api(28, "TxnOffsetCommit", 0, 3, 3, TXN_OFFSET_COMMIT_REQUEST, TXN_OFFSET_COMMIT_RESPONSE),
    )
}
API_VERSIONS_KEY = 18


def versions_markdown() -> str:
    """The README's table of served APIs (a test holds the README to it)."""
    rows = ["| API | key | versions | flexible from |", "| --- | --- | --- | --- |"]
    for a in sorted(APIS.values(), key=lambda a: a.key):
        flexible = str(a.flexible_from) if a.flexible_from <= a.max_version else "—"
        rows.append(f"| {a.name} | {a.key} | {a.min_version}–{a.max_version} | {flexible} |")
    return "\n".join(rows)
