"""logsim: a crash simulator for Kafka log directories.

`SimDisk` runs the real storage and recovery code on a disk that keeps a volatile page cache apart
from a durable image; `faults` turns its operation trace into the disk images a power loss could
leave; workloads, invariants, exploration and scenario files build on those two.
"""
