"""The request and response field lists of the served APIs, up to the highest version served.

Transcribed (field names in snake_case) from the field lists of Kafka's message definitions
(`clients/src/main/resources/common/message/*.json`): each field's versions, the versions in which
it is nullable, its tag in flexible versions, and its default where it is not the type's zero.
"""

from __future__ import annotations

from .fields import Struct, f

# ApiVersionsRequest Kafka's versions 0-4 flexible 3+
API_VERSIONS_REQUEST = [
    f("client_software_name", "string", "3+"),
    f("client_software_version", "string", "3+"),
]
# ApiVersionsResponse Kafka's versions 0-4 flexible 3+
API_VERSIONS_RESPONSE = [
    f("error_code", "int16"),
    f(
        "api_keys",
        [
            f("api_key", "int16"),
            f("min_version", "int16"),
            f("max_version", "int16"),
        ],
    ),
    f("throttle_time_ms", "int32", "1+"),
    f(
        "supported_features",
        [
            f("name", "string", "3+"),
            f("min_version", "int16", "3+"),
            f("max_version", "int16", "3+"),
        ],
        "3+",
        tag=0,
    ),
    f("finalized_features_epoch", "int64", "3+", tag=1, default=-1),
    f(
        "finalized_features",
        [
            f("name", "string", "3+"),
            f("max_version_level", "int16", "3+"),
            f("min_version_level", "int16", "3+"),
        ],
        "3+",
        tag=2,
    ),
    f("zk_migration_ready", "bool", "3+", tag=3),
]
# MetadataRequest Kafka's versions 0-12 flexible 9+
METADATA_REQUEST = [
    f(
        "topics",
        [
            f("name", "string"),
        ],
        nullable=1,
    ),
    f("allow_auto_topic_creation", "bool", "4+", default=True),
    f("include_cluster_authorized_operations", "bool", "8+"),
    f("include_topic_authorized_operations", "bool", "8+"),
]
# MetadataResponse Kafka's versions 0-12 flexible 9+
METADATA_RESPONSE = [
    f("throttle_time_ms", "int32", "3+"),
    f(
        "brokers",
        [
            f("node_id", "int32"),
            f("host", "string"),
            f("port", "int32"),
            f("rack", "string", "1+", nullable=1),
        ],
    ),
    f("cluster_id", "string", "2+", nullable=2),
    f("controller_id", "int32", "1+", default=-1),
    f(
        "topics",
        [
            f("error_code", "int16"),
            f("name", "string"),
            f("is_internal", "bool", "1+"),
            f(
                "partitions",
                [
                    f("error_code", "int16"),
                    f("partition_index", "int32"),
                    f("leader_id", "int32"),
                    f("leader_epoch", "int32", "7+", default=-1),
                    f("replica_nodes", "[int32]"),
                    f("isr_nodes", "[int32]"),
                    f("offline_replicas", "[int32]", "5+"),
                ],
            ),
            f("topic_authorized_operations", "int32", "8+", default=-2147483648),
        ],
    ),
    f("cluster_authorized_operations", "int32", "8+", default=-2147483648),
]
# ProduceRequest Kafka's versions 0-11 flexible 9+
PRODUCE_REQUEST = [
    f("transactional_id", "string", "3+", nullable=3),
    f("acks", "int16"),
    f("timeout_ms", "int32"),
    f(
        "topic_data",
        [
            f("name", "string"),
            f(
                "partition_data",
                [
                    f("index", "int32"),
                    f("records", "records", nullable=0),
                ],
            ),
        ],
    ),
]
# ProduceResponse Kafka's versions 0-11 flexible 9+
PRODUCE_RESPONSE = [
    f(
        "responses",
        [
            f("name", "string"),
            f(
                "partition_responses",
                [
                    f("index", "int32"),
                    f("error_code", "int16"),
                    f("base_offset", "int64"),
                    f("log_append_time_ms", "int64", "2+", default=-1),
                    f("log_start_offset", "int64", "5+", default=-1),
                    f(
                        "record_errors",
                        [
                            f("batch_index", "int32", "8+"),
                            f("batch_index_error_message", "string", "8+", nullable=8),
                        ],
                        "8+",
                    ),
                    f("error_message", "string", "8+", nullable=8),
                ],
            ),
        ],
    ),
    f("throttle_time_ms", "int32", "1+"),
]
# FetchRequest Kafka's versions 0-17 flexible 12+
FETCH_REQUEST = [
    f("cluster_id", "string", "12+", nullable=12, tag=0),
    f("replica_id", "int32", default=-1),
    f("max_wait_ms", "int32"),
    f("min_bytes", "int32"),
    f("max_bytes", "int32", "3+", default=2147483647),
    f("isolation_level", "int8", "4+"),
    f("session_id", "int32", "7+"),
    f("session_epoch", "int32", "7+", default=-1),
    f(
        "topics",
        [
            f("topic", "string"),
            f(
                "partitions",
                [
                    f("partition", "int32"),
                    f("current_leader_epoch", "int32", "9+", default=-1),
                    f("fetch_offset", "int64"),
                    f("last_fetched_epoch", "int32", "12+", default=-1),
                    f("log_start_offset", "int64", "5+", default=-1),
                    f("partition_max_bytes", "int32"),
                ],
            ),
        ],
    ),
    f(
        "forgotten_topics_data",
        [
            f("topic", "string", "7+"),
            f("partitions", "[int32]", "7+"),
        ],
        "7+",
    ),
    f("rack_id", "string", "11+"),
]
# FetchResponse Kafka's versions 0-17 flexible 12+
FETCH_RESPONSE = [
    f("throttle_time_ms", "int32", "1+"),
    f("error_code", "int16", "7+"),
    f("session_id", "int32", "7+"),
    f(
        "responses",
        [
            f("topic", "string"),
            f(
                "partitions",
                [
                    f("partition_index", "int32"),
                    f("error_code", "int16"),
                    f("high_watermark", "int64"),
                    f("last_stable_offset", "int64", "4+", default=-1),
                    f("log_start_offset", "int64", "5+", default=-1),
                    f(
                        "diverging_epoch",
                        Struct(
                            [
                                f("epoch", "int32", "12+", default=-1),
                                f("end_offset", "int64", "12+", default=-1),
                            ]
                        ),
                        "12+",
                        tag=0,
                    ),
                    f(
                        "current_leader",
                        Struct(
                            [
                                f("leader_id", "int32", "12+", default=-1),
                                f("leader_epoch", "int32", "12+", default=-1),
                            ]
                        ),
                        "12+",
                        tag=1,
                    ),
                    f(
                        "snapshot_id",
                        Struct(
                            [
                                f("end_offset", "int64", default=-1),
                                f("epoch", "int32", default=-1),
                            ]
                        ),
                        "12+",
                        tag=2,
                    ),
                    f(
                        "aborted_transactions",
                        [
                            f("producer_id", "int64", "4+"),
                            f("first_offset", "int64", "4+"),
                        ],
                        "4+",
                        nullable=4,
                    ),
                    f("preferred_read_replica", "int32", "11+", default=-1),
                    f("records", "records", nullable=0),
                ],
            ),
        ],
    ),
]
# ListOffsetsRequest Kafka's versions 0-10 flexible 6+
LIST_OFFSETS_REQUEST = [
    f("replica_id", "int32"),
    f("isolation_level", "int8", "2+"),
    f(
        "topics",
        [
            f("name", "string"),
            f(
                "partitions",
                [
                    f("partition_index", "int32"),
                    f("current_leader_epoch", "int32", "4+", default=-1),
                    f("timestamp", "int64"),
                    f("max_num_offsets", "int32", "0-0", default=1),
                ],
            ),
        ],
    ),
]
# ListOffsetsResponse Kafka's versions 0-10 flexible 6+
LIST_OFFSETS_RESPONSE = [
    f("throttle_time_ms", "int32", "2+"),
    f(
        "topics",
        [
            f("name", "string"),
            f(
                "partitions",
                [
                    f("partition_index", "int32"),
                    f("error_code", "int16"),
                    f("old_style_offsets", "[int64]", "0-0"),
                    f("timestamp", "int64", "1+", default=-1),
                    f("offset", "int64", "1+", default=-1),
                    f("leader_epoch", "int32", "4+", default=-1),
                ],
            ),
        ],
    ),
]
# FindCoordinatorRequest Kafka's versions 0-6 flexible 3+
FIND_COORDINATOR_REQUEST = [
    f("key", "string"),
    f("key_type", "int8", "1+"),
]
# FindCoordinatorResponse Kafka's versions 0-6 flexible 3+
FIND_COORDINATOR_RESPONSE = [
    f("throttle_time_ms", "int32", "1+"),
    f("error_code", "int16"),
    f("error_message", "string", "1+", nullable=1),
    f("node_id", "int32"),
    f("host", "string"),
    f("port", "int32"),
]
# OffsetCommitRequest Kafka's versions 0-9 flexible 8+
OFFSET_COMMIT_REQUEST = [
    f("group_id", "string"),
    f("generation_id_or_member_epoch", "int32", "1+", default=-1),
    f("member_id", "string", "1+"),
    f("group_instance_id", "string", "7+", nullable=7),
    f("retention_time_ms", "int64", "2-4", default=-1),
    f(
        "topics",
        [
            f("name", "string"),
            f(
                "partitions",
                [
                    f("partition_index", "int32"),
                    f("committed_offset", "int64"),
                    f("committed_leader_epoch", "int32", "6+", default=-1),
                    f("commit_timestamp", "int64", "1-1", default=-1),
                    f("committed_metadata", "string", nullable=0),
                ],
            ),
        ],
    ),
]
# OffsetCommitResponse Kafka's versions 0-9 flexible 8+
OFFSET_COMMIT_RESPONSE = [
    f("throttle_time_ms", "int32", "3+"),
    f(
        "topics",
        [
            f("name", "string"),
            f(
                "partitions",
                [
                    f("partition_index", "int32"),
                    f("error_code", "int16"),
                ],
            ),
        ],
    ),
]
# OffsetFetchRequest Kafka's versions 0-9 flexible 6+
OFFSET_FETCH_REQUEST = [
    f("group_id", "string"),
    f(
        "topics",
        [
            f("name", "string"),
            f("partition_indexes", "[int32]"),
        ],
        nullable=2,
    ),
    f("require_stable", "bool", "7+"),
]
# OffsetFetchResponse Kafka's versions 0-9 flexible 6+
OFFSET_FETCH_RESPONSE = [
    f("throttle_time_ms", "int32", "3+"),
    f(
        "topics",
        [
            f("name", "string"),
            f(
                "partitions",
                [
                    f("partition_index", "int32"),
                    f("committed_offset", "int64"),
                    f("committed_leader_epoch", "int32", "5+", default=-1),
                    f("metadata", "string", nullable=0),
                    f("error_code", "int16"),
                ],
            ),
        ],
    ),
    f("error_code", "int16", "2+"),
]
# InitProducerIdRequest Kafka's versions 0-5 flexible 2+
INIT_PRODUCER_ID_REQUEST = [
    f("transactional_id", "string", nullable=0),
    f("transaction_timeout_ms", "int32"),
    f("producer_id", "int64", "3+", default=-1),
    f("producer_epoch", "int16", "3+", default=-1),
]
# InitProducerIdResponse Kafka's versions 0-5 flexible 2+
INIT_PRODUCER_ID_RESPONSE = [
    f("throttle_time_ms", "int32"),
    f("error_code", "int16"),
    f("producer_id", "int64", default=-1),
    f("producer_epoch", "int16"),
]
# JoinGroupRequest Kafka's versions 0-9 flexible 6+
JOIN_GROUP_REQUEST = [
    f("group_id", "string"),
    f("session_timeout_ms", "int32"),
    f("rebalance_timeout_ms", "int32", "1+", default=-1),
    f("member_id", "string"),
    f("group_instance_id", "string", "5+", nullable=5),
    f("protocol_type", "string"),
    f(
        "protocols",
        [
            f("name", "string"),
            f("metadata", "bytes"),
        ],
    ),
]
# JoinGroupResponse Kafka's versions 0-9 flexible 6+
JOIN_GROUP_RESPONSE = [
    f("throttle_time_ms", "int32", "2+"),
    f("error_code", "int16"),
    f("generation_id", "int32", default=-1),
    f("protocol_type", "string", "7+", nullable=7),
    f("protocol_name", "string", nullable=7),
    f("leader", "string"),
    f("member_id", "string"),
    f(
        "members",
        [
            f("member_id", "string"),
            f("group_instance_id", "string", "5+", nullable=5),
            f("metadata", "bytes"),
        ],
    ),
]
# SyncGroupRequest Kafka's versions 0-5 flexible 4+
SYNC_GROUP_REQUEST = [
    f("group_id", "string"),
    f("generation_id", "int32"),
    f("member_id", "string"),
    f("group_instance_id", "string", "3+", nullable=3),
    f("protocol_type", "string", "5+", nullable=5),
    f("protocol_name", "string", "5+", nullable=5),
    f(
        "assignments",
        [
            f("member_id", "string"),
            f("assignment", "bytes"),
        ],
    ),
]
# SyncGroupResponse Kafka's versions 0-5 flexible 4+
SYNC_GROUP_RESPONSE = [
    f("throttle_time_ms", "int32", "1+"),
    f("error_code", "int16"),
    f("protocol_type", "string", "5+", nullable=5),
    f("protocol_name", "string", "5+", nullable=5),
    f("assignment", "bytes"),
]
# HeartbeatRequest Kafka's versions 0-4 flexible 4+
HEARTBEAT_REQUEST = [
    f("group_id", "string"),
    f("generation_id", "int32"),
    f("member_id", "string"),
    f("group_instance_id", "string", "3+", nullable=3),
]
# HeartbeatResponse Kafka's versions 0-4 flexible 4+
HEARTBEAT_RESPONSE = [
    f("throttle_time_ms", "int32", "1+"),
    f("error_code", "int16"),
]
# LeaveGroupRequest Kafka's versions 0-5 flexible 4+
LEAVE_GROUP_REQUEST = [
    f("group_id", "string"),
    f("member_id", "string", "0-2"),
    f(
        "members",
        [
            f("member_id", "string", "3+"),
            f("group_instance_id", "string", "3+", nullable=3),
        ],
        "3+",
    ),
]
# LeaveGroupResponse Kafka's versions 0-5 flexible 4+
LEAVE_GROUP_RESPONSE = [
    f("throttle_time_ms", "int32", "1+"),
    f("error_code", "int16"),
    f(
        "members",
        [
            f("member_id", "string", "3+"),
            f("group_instance_id", "string", "3+", nullable=3),
            f("error_code", "int16", "3+"),
        ],
        "3+",
    ),
]
# AddPartitionsToTxnRequest Kafka's versions 0-5 flexible 3+
ADD_PARTITIONS_TO_TXN_REQUEST = [
    f("transactional_id", "string"),
    f("producer_id", "int64"),
    f("producer_epoch", "int16"),
    f(
        "topics",
        [
            f("name", "string"),
            f("partitions", "[int32]"),
        ],
    ),
]
# AddPartitionsToTxnResponse Kafka's versions 0-5 flexible 3+
ADD_PARTITIONS_TO_TXN_RESPONSE = [
    f("throttle_time_ms", "int32"),
    f(
        "results_by_topic",
        [
            f("name", "string"),
            f(
                "results_by_partition",
                [
                    f("partition_index", "int32"),
                    f("partition_error_code", "int16"),
                ],
            ),
        ],
    ),
]
# AddOffsetsToTxnRequest Kafka's versions 0-4 flexible 3+
ADD_OFFSETS_TO_TXN_REQUEST = [
    f("transactional_id", "string"),
    f("producer_id", "int64"),
    f("producer_epoch", "int16"),
    f("group_id", "string"),
]
# AddOffsetsToTxnResponse Kafka's versions 0-4 flexible 3+
ADD_OFFSETS_TO_TXN_RESPONSE = [
    f("throttle_time_ms", "int32"),
    f("error_code", "int16"),
]
# EndTxnRequest Kafka's versions 0-5 flexible 3+
END_TXN_REQUEST = [
    f("transactional_id", "string"),
    f("producer_id", "int64"),
    f("producer_epoch", "int16"),
    f("committed", "bool"),
]
# EndTxnResponse Kafka's versions 0-5 flexible 3+
END_TXN_RESPONSE = [
    f("throttle_time_ms", "int32"),
    f("error_code", "int16"),
]
# TxnOffsetCommitRequest Kafka's versions 0-4 flexible 3+
TXN_OFFSET_COMMIT_REQUEST = [
    f("transactional_id", "string"),
    f("group_id", "string"),
    f("producer_id", "int64"),
    f("producer_epoch", "int16"),
    f("generation_id", "int32", "3+", default=-1),
    f("member_id", "string", "3+"),
    f("group_instance_id", "string", "3+", nullable=3),
    f(
        "topics",
        [
            f("name", "string"),
            f(
                "partitions",
                [
                    f("partition_index", "int32"),
                    f("committed_offset", "int64"),
                    f("committed_leader_epoch", "int32", "2+", default=-1),
                    f("committed_metadata", "string", nullable=0),
                ],
            ),
        ],
    ),
]
# TxnOffsetCommitResponse Kafka's versions 0-4 flexible 3+
TXN_OFFSET_COMMIT_RESPONSE = [
    f("throttle_time_ms", "int32"),
    f(
        "topics",
        [
            f("name", "string"),
            f(
                "partitions",
                [
                    f("partition_index", "int32"),
                    f("error_code", "int16"),
                ],
            ),
        ],
    ),
]
