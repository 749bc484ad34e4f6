"""`logsim serve`: a crashable single broker that real Kafka clients talk to.

The wire protocol is `logrepair.protocol` (sans-I/O); this package is the broker around it: the
leader's validation of produced batches (`log_validator`), idempotent-producer checks and
transaction state (`producers`), group membership (`groups`), committed offsets in
`__consumer_offsets` (`offsets_topic`), the request handlers (`broker`, `coordinator`), storage with
power cuts and reboots (`storage`), the asyncio server and its admin channel (`server`), the record
of acknowledgements and losses (`ledger`), the command line and the verdict's text (`cli`), a broker
on a test's thread (`testing`), and client chaos scenarios with the clients that run them
(`scenario`, `clients`).
"""
