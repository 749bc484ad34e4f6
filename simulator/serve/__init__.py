"""`logsim serve`: a crashable single broker that real Kafka clients talk to.

The wire protocol is `logrepair.protocol` (sans-I/O); this package is the broker around it: the
leader's validation of produced batches (`log_validator`), producer and transaction state
(`producers`), consumer groups and their offsets in `__consumer_offsets` (`groups`), the request
handlers (`broker`), storage with power cuts and reboots (`storage`), the asyncio server and its
admin channel (`server`), and the record of acknowledgements and losses (`ledger`, `verdict`).
"""
