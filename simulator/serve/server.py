"""The asyncio server around the sans-I/O protocol, the periodic broker tasks, and the admin channel.

Each connection is read into a `ServerConnection`; its requests are handled one at a time, in
order, as Kafka handles a connection's requests. A frame that does not parse closes that connection
with one log line; nothing a client sends stops the broker.

The admin channel is a tiny HTTP endpoint on another loopback port (`curl` works):

    GET  /status                          the partitions (log start/end, recovery point, high watermark)
    POST /cut?fault=F                     cut the power now under crash fault F, then reboot
    POST /cut?fault=F&after_ops=N         cut it N disk operations from now, inside whatever
                                          storage call runs then (`random=1` draws N in 1..200)
    POST /stop                            clean shutdown; the verdict is printed

SIGUSR1 cuts the power now under `--fault`; SIGTERM and SIGINT stop cleanly.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import time
from collections import Counter
from urllib.parse import parse_qs, urlsplit

from logrepair.protocol.connection import (
    CLOSED,
    NEED_DATA,
    ServerConnection,
    UnsupportedRequest,
)
from logrepair.protocol.errors import ErrorCode, ProtocolError
from logrepair.protocol.schema import API_VERSIONS_KEY

from .broker import Broker
from .ledger import tp_name
from .storage import PowerCut

log = logging.getLogger(__name__)

TICK_S = 0.05
RANDOM_CUT_OPS = 200


class Server:
    def __init__(
        self,
        broker: Broker,
        *,
        admin_port: int | None = 0,
        default_fault: str = "lose_unsynced",
        checkpoint_interval_ms: int = 60_000,
    ) -> None:
        self.broker = broker
        self.admin_port = admin_port
        self.default_fault = default_fault
        self.checkpoint_interval_ms = checkpoint_interval_ms
        self.stopped = asyncio.Event()
        self._kafka: asyncio.Server | None = None
        self._admin: asyncio.Server | None = None
        self._clients: set[asyncio.StreamWriter] = set()
        self._ticker: asyncio.Task | None = None
        self.requests: Counter[str] = Counter()
        """Requests served, by API and version: what the clients negotiated."""

    # --- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        opts = self.broker.options
        self._kafka = await asyncio.start_server(self._client, opts.host, opts.port)
        opts.port = self._kafka.sockets[0].getsockname()[1]
        if self.admin_port is not None:
            self._admin = await asyncio.start_server(self._admin_client, opts.host, self.admin_port)
            self.admin_port = self._admin.sockets[0].getsockname()[1]
        self._ticker = asyncio.create_task(self._tick())
        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGUSR1, self.cut_now, self.default_fault)
            loop.add_signal_handler(signal.SIGTERM, self.stopped.set)
            loop.add_signal_handler(signal.SIGINT, self.stopped.set)
        except (NotImplementedError, RuntimeError, ValueError):
            pass  # not the main thread (an in-process test server): the admin channel does it

    async def serve_until_stopped(self) -> None:
        await self.stopped.wait()
        await self.close()

    async def close(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
        for server in (self._kafka, self._admin):
            if server is not None:
                server.close()
        self._drop_clients()
        self.broker.coordinator.membership.reset()
        self.broker.notify_fetchers()

    def _drop_clients(self) -> None:
        for w in list(self._clients):
            w.transport.abort()
        self._clients.clear()

    # --- power ----------------------------------------------------------------------------------

    def cut_now(self, fault: str) -> dict:
        """Power cut and reboot, synchronously on the loop: every connection dies with the broker
        and clients reconnect to the same port."""
        self._drop_clients()
        self.broker.coordinator.membership.reset()
        return self.broker.cut(fault)

    def _power_cut_hit(self) -> None:
        """A `PowerCut` came out of a storage call: the armed cut (its image already taken)."""
        self.cut_now(self.default_fault)

    async def _tick(self) -> None:
        """Kafka's periodic tasks: the flusher (`flush.ms`), delayed deletes and post-roll
        flushes, the recovery-point checkpoint, group session expiry."""
        last_checkpoint = time.monotonic()
        while True:
            await asyncio.sleep(TICK_S)
            storage = self.broker.storage
            try:
                storage.log_dir.flush_dirty_logs()
                storage.log_dir.run_pending()
                if time.monotonic() - last_checkpoint >= self.checkpoint_interval_ms / 1000:
                    storage.log_dir.checkpoint()
                    last_checkpoint = time.monotonic()
            except PowerCut:
                self._power_cut_hit()
            except Exception as e:  # an offline log dir: the handlers report it per request
                log.error("periodic task failed: %s", e)
            self.broker.coordinator.membership.expire_sessions()

    # --- Kafka connections ----------------------------------------------------------------------

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        conn = ServerConnection()
        self._clients.add(writer)
        out = bytearray()  # the answers to one read's requests go out in one write
        try:
            while True:
                data = await reader.read(1 << 18)
                conn.receive_data(data)
                while True:
                    event = conn.next_event()
                    if event is NEED_DATA or event is CLOSED:
                        break
                    if isinstance(event, UnsupportedRequest):
                        if event.api.key != API_VERSIONS_KEY:
                            log.warning(
                                "closing connection from %s: %s v%d is not supported (%d-%d)",
                                peer, event.api.name, event.header.api_version,
                                event.api.min_version, event.api.max_version,
                            )  # fmt: skip
                            return
                        body = self.broker.api_versions_body(ErrorCode.UNSUPPORTED_VERSION)
                        out += conn.respond(event, body)
                        continue
                    self.requests[f"{event.api.name} v{event.version}"] += 1
                    try:
                        response = self.broker.dispatch(event)
                        if asyncio.iscoroutine(response):
                            if out:  # what is answered goes out before a wait
                                writer.write(out)
                                out = bytearray()
                            response = await response
                    except PowerCut:
                        self._power_cut_hit()
                        return
                    if writer not in self._clients:
                        return  # the power went while this request waited
                    if response is not None:
                        out += conn.respond(event, response)
                if out:
                    writer.write(out)
                    out = bytearray()
                await writer.drain()
                if event is CLOSED or not data:
                    return
        except ProtocolError as e:
            log.warning("closing connection from %s: malformed request: %s", peer, e)
        except (ConnectionError, asyncio.CancelledError):
            pass
        except Exception:
            log.exception("closing connection from %s: internal error", peer)
        finally:
            self._clients.discard(writer)
            writer.transport.abort()

    # --- admin channel --------------------------------------------------------------------------

    async def _admin_client(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            method, target, _ = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ValueError):
            method = target = None
        try:
            if method is None or target is None:
                status, body = 400, {"error": "expected an HTTP request"}
            else:
                status, body = self._admin_request(method, target)
        except ValueError as e:  # an unknown fault, a fault the disk cannot model
            status, body = 400, {"error": str(e)}
        except Exception as e:  # a cut that failed: say so, keep serving what is left
            log.exception("admin request failed")
            status, body = 500, {"error": f"{type(e).__name__}: {e}"}
        data = json.dumps(body).encode()
        writer.write(
            f"HTTP/1.0 {status} {'OK' if status == 200 else 'Error'}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n".encode()
            + data
        )
        try:
            await writer.drain()
        finally:
            writer.close()

    def _admin_request(self, method: str, target: str) -> tuple[int, dict]:
        url = urlsplit(target)
        q = {k: v[-1] for k, v in parse_qs(url.query).items()}
        if url.path == "/status":
            return 200, self.status()
        if method != "POST":
            return 405, {"error": "use POST for /cut and /stop"}
        if url.path == "/stop":
            self.stopped.set()
            return 200, {"stopping": True}
        if url.path == "/cut":
            fault = q.get("fault", self.default_fault)
            if "after_ops" in q or q.get("random") == "1":
                n = (
                    int(q["after_ops"])
                    if "after_ops" in q
                    else self.broker.storage.rng.randint(1, RANDOM_CUT_OPS)
                )
                self.broker.storage.arm(n, fault)
                return 200, {"armed": True, "fault": fault, "after_ops": n}
            return 200, self.cut_now(fault)
        return 404, {"error": f"no {url.path}"}

    def status(self) -> dict:
        b = self.broker
        return {
            "port": b.options.port,
            "leader_epoch": b.leader_epoch,
            "cuts": b.storage.cuts,
            "requests": dict(sorted(self.requests.items())),
            "partitions": {
                tp_name(tp): {
                    "log_start_offset": lg.log_start_offset,
                    "log_end_offset": lg.log_end_offset,
                    "recovery_point": lg.recovery_point,
                    "high_watermark": lg.high_watermark,
                }
                for tp, lg in sorted(b.storage.logs.items(), key=lambda kv: tp_name(kv[0]))
            },
        }
