"""`logrepair audit PATH... --summaries-out DEST`: one broker's scan, kept as a Parquet summary.

Run where the data lives (on each broker): discovery and the audit's segment scan, as `audit` runs
them, with each valid batch's digest streamed to `segments.parquet` instead of compared here. The
fleet checks run later on Spark over every broker's summary (fleet_spark.py), so no executor ever
reads a broker's disk.

DEST is a local folder or any URI pyarrow's filesystems write (summary_store.py).
Each table is written to a hidden temporary file and moved into place when all are written, the
`broker.parquet` manifest last, so a reader sees a broker's previous summary or its new one.

Incremental: a segment whose stamp (size, modification time, change time and inode) equals the one
in the broker's previous summary is not read again; its row is copied from there. Kafka writes only
the active segment and replaces others by renaming new files in (compaction, splits), which changes
the inode; an in-place rewrite changes the modification time, and the change time even when the
modification time is set back. A file modified less than `RACY_NS` before its stamp was taken is
scanned again whatever its stamp. Bit rot below the file system changes nothing a stamp sees:
`--full-rescan` reads everything again.
"""

from __future__ import annotations

import os
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .. import __version__
from ..pool import Mapper, serial
from ..storage.disk import Disk
from ..storage.osdisk import OsDisk
from .discovery import discover
from .errors import SummaryError
from .model import LogDirPlan, SegmentSummary, SegmentTask
from .segments import summarize_details
from .summary_store import open_location, read_file
from .summary_tables import (
    DETAIL_COLUMNS,
    DIGEST_COLUMNS,
    FORMAT_VERSION,
    SCHEMAS,
    STAMP_COLUMNS,
    SegmentRows,
    broker_dir,
    log_dir_row,
    partition_row,
)

UNKNOWN_CLUSTER = "unknown"
RACY_NS = 2_000_000_000
"""A stamp is trusted only for a file last modified this long before it was taken: timestamps
are coarse (a kernel tick; whole seconds on some file systems), so a file rewritten in the same
tick as its stamp keeps its mtime. Such a file is scanned again next time (git's racy-clean rule)."""
ROW_GROUP_BATCHES = 1 << 18
"""Digests per Parquet row group of `segments` (about 16 MiB in memory): bounds the writer's and a
reader's memory whatever the size of the log."""
_STRINGS = [f.name for f in SCHEMAS["segments"] if f.type == pa.string()]
_DELTA = {f"{c}.list.element": "DELTA_BINARY_PACKED" for c in (*DIGEST_COLUMNS, *DETAIL_COLUMNS)}

Stamp = tuple[int, int, int, int]


@dataclass(slots=True)
class BrokerSummary:
    """What one run wrote for one broker."""

    cluster: str
    broker: str
    path: str
    log_dirs: int = 0
    partitions: int = 0
    segments: int = 0
    scanned: int = 0
    log_bytes: int = 0
    scanned_bytes: int = 0
    summary_bytes: int = 0
    previous: str = "none"
    """What became of the previous summary: none, used, or why it was not."""

    def to_json(self) -> dict:
        return {
            "cluster": self.cluster,
            "broker": self.broker,
            "path": self.path,
            "log_dirs": self.log_dirs,
            "partitions": self.partitions,
            "segments": self.segments,
            "segments_scanned": self.scanned,
            "log_bytes": self.log_bytes,
            "scanned_bytes": self.scanned_bytes,
            "summary_bytes": self.summary_bytes,
            "previous": self.previous,
        }


def file_stamp(disk: Disk, task: SegmentTask) -> Stamp:
    """(size, mtime ns, ctime ns, inode) of a segment, taken before it is scanned so that any
    later change shows in the next run; (size, -1, -1, 0), never reused, when the file cannot be
    stat'ed. Another Disk than the OS's has size and mtime only."""
    try:
        if isinstance(disk, OsDisk):
            st = os.stat(task.file)
            return task.size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino
        return task.size, int(disk.mtime(task.file) * 1e9), 0, 0
    except OSError:
        return task.size, -1, -1, 0


def write_summaries(
    paths: list[str],
    dest: str,
    *,
    broker: str | None = None,
    full_rescan: bool = False,
    disk: Disk | None = None,
    segments: Mapper | None = None,
    plans: list[LogDirPlan] | None = None,
) -> list[BrokerSummary]:
    """Summarizes the log dirs under `paths` into DEST, one summary per broker label (the audit's:
    `node-<node.id>`, or `broker` for all of them). `segments` scans the segments to summarize
    (`logrepair.pool`: in worker processes, in order; None: one after the other here). `plans`:
    the log dirs `discover` found under `paths` already."""
    disk = disk or OsDisk()
    fs, root = open_location(dest)
    if plans is None:
        plans = discover(disk, paths, segments)
    if broker is not None:
        for p in plans:
            p.broker = broker
    brokers: dict[str, list[LogDirPlan]] = {}
    for p in plans:
        brokers.setdefault(p.broker, []).append(p)
    out = []
    for label, dirs in sorted(brokers.items()):
        clusters = Counter(d.meta.cluster_id for d in dirs if d.meta and d.meta.cluster_id)
        cluster = clusters.most_common(1)[0][0] if clusters else UNKNOWN_CLUSTER
        writer = BrokerSummaryWriter(fs, root, cluster, label, shown=dest)
        try:
            out.append(
                _summarize_broker(
                    disk, writer, dirs, full_rescan=full_rescan, segments=segments or serial
                )
            )
        except (OSError, pa.ArrowException) as e:  # writing DEST: a scan keeps its own errors
            writer.abort()
            raise SummaryError(f"{writer.stats.path}: {e}") from None
        except BaseException:
            writer.abort()
            raise
    return out


def _summarize_broker(
    disk: Disk,
    writer: BrokerSummaryWriter,
    dirs: list[LogDirPlan],
    *,
    full_rescan: bool,
    segments: Mapper,
) -> BrokerSummary:
    """Each segment copied from the previous summary when its stamp is unchanged, else scanned."""
    stats = writer.stats
    writer.refuse_another_brokers_summary(dirs)
    previous, settled_before = {}, 0
    if full_rescan:
        stats.previous = "not used: --full-rescan"
    else:
        previous, stamped_at = writer.previous_stamps()
        settled_before = stamped_at - RACY_NS
    tasks = [t for d in dirs for p in d.partitions for t in p.segments]
    writer.stamped_at = time.time_ns()
    stamps = {t.file: file_stamp(disk, t) for t in tasks}
    reused = {
        f
        for f, stamp in stamps.items()
        if 0 <= stamp[1] < settled_before and previous.get(f) == stamp
    }
    writer.copy_segments(reused)
    todo = [t for t in tasks if t.file not in reused]
    for summary in segments(summarize_details, disk, todo):
        t = summary.task
        writer.add_segment(summary, stamps[t.file])
        stats.scanned += 1
        stats.scanned_bytes += t.size
    for d in dirs:
        writer.add_log_dir(d)
    stats.segments = len(tasks)
    stats.log_bytes = sum(t.size for t in tasks)
    writer.commit()
    return stats


class BrokerSummaryWriter:
    """One broker's summary under `root/cluster=…/broker=…`. Segments stream out in row groups;
    `commit` moves every table into place. The bench feeds it generated summaries directly."""

    def __init__(
        self, fs: pafs.FileSystem, root: str, cluster: str, broker: str, *, shown: str | None = None
    ) -> None:
        """`shown`: DEST as the user wrote it, for messages (default: `root`)."""
        self.fs = fs
        self.dir = broker_dir(root, cluster, broker)
        shown = root if shown is None or "://" not in shown else shown
        self.stats = BrokerSummary(cluster, broker, broker_dir(shown, cluster, broker))
        self._tag = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._log_dirs: list[dict] = []
        self._partitions: list[dict] = []
        self._rows = SegmentRows()
        self.stamped_at = time.time_ns()
        """When the segments' stamps were taken (before any of them)."""
        try:
            fs.create_dir(self.dir, recursive=True)
            self._segments = pq.ParquetWriter(
                self._tmp("segments"),
                SCHEMAS["segments"],
                filesystem=fs,
                compression="zstd",
                use_dictionary=_STRINGS,
                column_encoding=_DELTA,
            )
        except (OSError, pa.ArrowException) as e:
            raise SummaryError(f"{self.stats.path}: cannot write there: {e}") from None

    def _tmp(self, table: str) -> str:
        return f"{self.dir}/.{table}.parquet.{self._tag}.tmp"

    def _final(self, table: str) -> str:
        return f"{self.dir}/{table}.parquet"

    def refuse_another_brokers_summary(self, dirs: list[LogDirPlan]) -> None:
        """Two brokers with one label (a node id used twice) would overwrite each other's
        summary in turn. Where log dirs carry directory ids (KRaft), a previous summary of other
        log dirs is refused rather than replaced."""
        mine = {d.meta.directory_id for d in dirs if d.meta and d.meta.directory_id}
        try:
            table = read_file(self.fs, self._final("log_dirs"), ["directory_id"])
        except (FileNotFoundError, pa.ArrowException, OSError):
            return
        theirs = {i for i in table.column("directory_id").to_pylist() if i}
        if mine and theirs and not mine & theirs:
            raise SummaryError(
                f"{self.stats.path} holds the summary of other log dirs (directory ids "
                f"{', '.join(sorted(theirs))}, not {', '.join(sorted(mine))}): is node id "
                "used by two brokers? Give this one its own label with --broker"
            )

    def previous_stamps(self) -> tuple[dict[str, Stamp], int]:
        """file → stamp of the segments in this broker's last summary, and when those stamps were
        taken (ns), when it can be reused: same format version and same logrepair version (a
        newer scanner may find more)."""
        try:
            manifest = read_file(self.fs, self._final("broker")).to_pylist()
        except (FileNotFoundError, pa.ArrowException, OSError):
            return {}, 0
        versions = [(m["format_version"], m["logrepair_version"]) for m in manifest]
        if versions != [(FORMAT_VERSION, __version__)]:
            found = ", ".join(f"format {f} of logrepair {v}" for f, v in versions)
            self.stats.previous = f"not used: written as {found or 'nothing'}"
            return {}, 0
        try:
            table = read_file(self.fs, self._final("segments"), ["file", *STAMP_COLUMNS])
        except (FileNotFoundError, pa.ArrowException, OSError) as e:
            self.stats.previous = f"not used: unreadable: {e}"
            return {}, 0
        self.stats.previous = "used"
        columns = [table.column(c).to_pylist() for c in ("file", *STAMP_COLUMNS)]
        stamped_at = int(manifest[0]["stamped_at"].timestamp() * 1000) * 1_000_000
        return {f: tuple(stamp) for f, *stamp in zip(*columns, strict=True)}, stamped_at

    def copy_segments(self, files: set[str]) -> None:
        """The previous summary's rows of `files`, streamed row group by row group."""
        if not files:
            return
        wanted = pa.array(sorted(files), pa.string())
        with self.fs.open_input_file(self._final("segments")) as f:
            for batch in pq.ParquetFile(f).iter_batches(batch_size=256):
                rows = pa.Table.from_batches([batch]).filter(pc.is_in(batch["file"], wanted))
                if rows.num_rows:
                    self._segments.write_table(rows.cast(SCHEMAS["segments"]))

    def add_segment(self, summary: SegmentSummary, stamp: Stamp) -> None:
        self._rows.add(summary, stamp)
        if self._rows.batches >= ROW_GROUP_BATCHES or len(self._rows.rows) >= 4096:
            self._flush()

    def add_log_dir(self, plan: LogDirPlan) -> None:
        self._log_dirs.append(log_dir_row(plan))
        self._partitions += [partition_row(p) for p in plan.partitions]
        self.stats.log_dirs += 1
        self.stats.partitions += len(plan.partitions)

    def _flush(self) -> None:
        if self._rows.rows:
            self._segments.write_table(self._rows.table())
            self._rows = SegmentRows()

    def commit(self) -> None:
        self._flush()
        self._segments.close()
        for table, rows in (("log_dirs", self._log_dirs), ("partitions", self._partitions)):
            pq.write_table(
                pa.Table.from_pylist(rows, SCHEMAS[table]),
                self._tmp(table),
                filesystem=self.fs,
                compression="zstd",
            )
        s = self.stats
        s.summary_bytes = sum(
            self.fs.get_file_info(self._tmp(t)).size for t in ("segments", "log_dirs", "partitions")
        )
        manifest = {
            "format_version": FORMAT_VERSION,
            "logrepair_version": __version__,
            "written_at": datetime.now(UTC),
            "stamped_at": datetime.fromtimestamp(self.stamped_at / 1e9, UTC),
            "log_dirs": s.log_dirs,
            "partitions": s.partitions,
            "segments": s.segments,
            "segments_scanned": s.scanned,
            "log_bytes": s.log_bytes,
            "summary_bytes": s.summary_bytes,
        }
        pq.write_table(
            pa.Table.from_pylist([manifest], SCHEMAS["broker"]),
            self._tmp("broker"),
            filesystem=self.fs,
        )
        s.summary_bytes += self.fs.get_file_info(self._tmp("broker")).size
        for table in ("segments", "log_dirs", "partitions", "broker"):
            self._move(self._tmp(table), self._final(table))

    def _move(self, src: str, dst: str) -> None:
        """A rename over `dst` where the filesystem has one (local, S3's copy); HDFS refuses to
        rename over a file, so there the old one goes first."""
        try:
            self.fs.move(src, dst)
        except OSError:
            self.fs.delete_file(dst)
            self.fs.move(src, dst)

    def abort(self) -> None:
        """Removes this run's temporary files; the previous summary stays as it was."""
        try:
            self._segments.close()
        except (OSError, pa.ArrowException):
            pass
        for table in ("segments", "log_dirs", "partitions", "broker"):
            try:
                self.fs.delete_file(self._tmp(table))
            except (FileNotFoundError, OSError):
                pass
