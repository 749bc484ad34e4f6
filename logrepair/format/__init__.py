"""Kafka's on-disk batch formats, sans-I/O: bytes and memoryviews in, values out.

Nothing in this package opens a file; storage and recovery hand it buffers.
"""
