"""Kafka's wire protocol, sans-I/O (like h11): bytes in, requests out; responses in, bytes out.

Nothing here owns a socket. `schema` holds the message layouts of the APIs `logsim serve` speaks (our
own transcription of the field lists of Kafka's message definitions), `codec` reads and writes them
for any version, flexible or not, and `connection` frames a byte stream into requests.
"""
