"""`logsim serve` inside a test process: the broker on a thread of its own, with power cuts on call.

    from simulator.serve.testing import ServeThread

    with ServeThread(["--flush-messages", "1"]) as broker:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
        ...
        broker.cut("lose_unsynced")          # power loss + repair + reboot, same port
        ...
    assert broker.summary["ok"]              # the verdict, as `logsim serve` prints it at exit

The arguments are `logsim serve`'s (the port defaults to a free one here). Leaving the `with`
block stops the broker cleanly, also when the test failed.
"""

from __future__ import annotations

import asyncio
import threading

from .broker import Broker
from .cli import build
from .server import Server
from .storage import BrokerStorage

START_TIMEOUT_S = 30


class ServeThread:
    def __init__(self, argv: list[str] = (), *, save: str | None = None) -> None:
        from simulator.cli import build_parser  # the one parser, so options match the CLI's

        args = build_parser().parse_args(["serve", "--port", "0", *argv])
        if save is not None:
            args.save = save
        self.args = args
        self.storage: BrokerStorage
        self.broker: Broker
        self.server: Server
        self.storage, self.broker, self.server, self._stack = build(args)
        self.summary: dict | None = None
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="logsim-serve", daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self.server.start())
        except BaseException as e:  # a port in use: reported by start()
            self._error = e
            self._ready.set()
            return
        self._ready.set()
        self._loop.run_until_complete(self.server.serve_until_stopped())
        pending = asyncio.all_tasks(self._loop)
        for task in pending:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self._loop.run_until_complete(self._loop.shutdown_asyncgens())
        self._loop.close()

    def start(self) -> ServeThread:
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT_S):
            raise TimeoutError("logsim serve did not start")
        if self._error is not None:
            raise self._error
        return self

    @property
    def port(self) -> int:
        return self.broker.options.port

    @property
    def admin_port(self) -> int | None:
        return self.server.admin_port

    @property
    def bootstrap(self) -> str:
        return f"{self.broker.options.host}:{self.port}"

    def run(self, fn, *args):
        """Runs `fn(*args)` on the broker's thread (storage is only touched from there)."""

        async def call():
            return fn(*args)

        return asyncio.run_coroutine_threadsafe(call(), self._loop).result(START_TIMEOUT_S)

    def cut(self, fault: str = "lose_unsynced") -> dict:
        """Power cut now, repair, reboot; returns the ledger's line for the cut."""
        return self.run(self.server.cut_now, fault)

    def arm(self, after_ops: int, fault: str = "lose_unsynced") -> None:
        """Power cut `after_ops` disk operations from now, inside whatever storage call runs then."""
        self.run(self.broker.storage.arm, after_ops, fault)

    def status(self) -> dict:
        return self.run(self.server.status)

    def stop(self) -> dict:
        """A clean shutdown; returns (and keeps in `summary`) the verdict."""
        if self.summary is not None:
            return self.summary
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self.server.stopped.set)
            self._thread.join(START_TIMEOUT_S)
        with self._stack:
            self.storage.close()
            if self.args.save:
                self.storage.save(self.args.save)
            self.summary = self.broker.ledger.finish()
        return self.summary

    def __enter__(self) -> ServeThread:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
