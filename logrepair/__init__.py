"""logrepair: offline verification and repair of Apache Kafka log directories."""

__version__ = "0.1.0"
