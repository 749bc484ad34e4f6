"""Where scan summaries live: DEST and SRC locations on pyarrow's filesystems, and the manifests.

A location is a local path or a URI pyarrow knows (`file://`, `s3://`, `hdfs://`; Hadoop's `s3a://`
is read as `s3://`). Under it, each broker's summary is a folder `cluster=<id>/broker=<label>`
(summary_tables.py). Before a fleet audit reads anything else, `read_manifests` reads every
broker's `broker.parquet` on the driver and refuses, in one line, what cannot be audited.
"""

from __future__ import annotations

import os
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .errors import SummaryError
from .summary_tables import FORMAT_VERSION


def open_location(where: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem and root path of a DEST or SRC: a URI pyarrow knows (Hadoop's `s3a://`
    read as `s3://`), or a local path."""
    if "://" in where:
        scheme, rest = where.split("://", 1)
        if not rest.strip("/"):
            raise SummaryError(f"{where}: no bucket or path after {scheme}://")
        uri = f"s3://{rest}" if scheme in ("s3a", "s3n") else where
        try:
            return pafs.FileSystem.from_uri(uri)
        except (pa.ArrowException, OSError, ValueError) as e:
            raise SummaryError(f"{where}: {e}") from None
    return pafs.LocalFileSystem(), os.path.abspath(where)


def read_file(fs: pafs.FileSystem, path: str, columns: list[str] | None = None) -> pa.Table:
    """One Parquet file as a table (its `columns`, or all). `pq.read_table` would go through
    pyarrow.dataset, which imports pandas: 0.2 s of CPU in every run for a few small reads."""
    with pq.ParquetFile(path, filesystem=fs) as f:
        return f.read(columns=columns)


def read_manifests(sources: list[str]) -> list[dict]:
    """The `broker.parquet` row of every broker under `sources`, with `cluster`, `broker` and
    `source`; refuses (one line) a SRC without summaries, a broker found twice, and any summary of
    another format version, before anything else reads them."""
    rows = []
    for source in sources:
        fs, root = open_location(source)
        found = 0
        clusters = _subdirs(fs, root, "cluster=")
        if root.rstrip("/").rsplit("/", 1)[-1].startswith("cluster="):
            clusters = [root.rstrip("/")]  # one cluster's folder
        for cluster_dir in clusters:
            for broker_dir_ in _subdirs(fs, cluster_dir, "broker="):
                try:
                    manifest = pq.read_table(f"{broker_dir_}/broker.parquet", filesystem=fs)
                except FileNotFoundError:
                    continue
                except (pa.ArrowException, OSError) as e:
                    raise SummaryError(f"{broker_dir_}/broker.parquet: unreadable: {e}") from None
                found += 1
                for m in manifest.to_pylist():
                    cluster = unquote(cluster_dir.rsplit("/cluster=", 1)[1])
                    broker = unquote(broker_dir_.rsplit("/broker=", 1)[1])
                    rows.append({**m, "cluster": cluster, "broker": broker, "source": source})
        if not found:
            raise SummaryError(
                f"{source}: no summaries there (no cluster=*/broker=*/broker.parquet, as "
                "`logrepair audit --summaries-out` writes them)"
            )
    _check_manifests(rows)
    return rows


def split_source(source: str) -> tuple[str, str]:
    """(the dataset's root, the `cluster=` folder name or `cluster=*`) of a SRC, which is a DEST
    of `--summaries-out` or one cluster's folder in it."""
    root, _, last = source.rstrip("/").rpartition("/")
    if last.startswith("cluster=") and root:
        return root, last
    return source.rstrip("/"), "cluster=*"


def _subdirs(fs: pafs.FileSystem, path: str, prefix: str) -> list[str]:
    try:
        infos = fs.get_file_info(pafs.FileSelector(path))
    except (FileNotFoundError, NotADirectoryError):
        return []
    except (pa.ArrowException, OSError) as e:
        raise SummaryError(f"{path}: {e}") from None
    return sorted(
        i.path
        for i in infos
        if i.type == pafs.FileType.Directory and i.base_name.startswith(prefix)
    )


def _check_manifests(rows: list[dict]) -> None:
    """Every broker once, every summary of this format version: one line otherwise."""
    seen: dict[tuple[str, str], str] = {}
    for r in rows:
        key = (r["cluster"], r["broker"])
        if key in seen:
            raise SummaryError(
                f"broker {key[1]} of cluster {key[0]} is in both {seen[key]} and {r['source']}"
            )
        seen[key] = r["source"]
    wrong = sorted(
        (r["cluster"], r["broker"], r.get("format_version"), r["source"])
        for r in rows
        if r.get("format_version") != FORMAT_VERSION
    )
    if wrong:
        cluster, broker, version, source = wrong[0]
        age = "an older" if (version or 0) < FORMAT_VERSION else "a newer"
        more = f" (and {len(wrong) - 1} more brokers)" if len(wrong) > 1 else ""
        raise SummaryError(
            f"{source}: the summary of broker {broker} of cluster {cluster}{more} is in format "
            f"version {version}, {age} one than this logrepair reads ({FORMAT_VERSION}): write it "
            "again with this logrepair's `audit --summaries-out`"
        )
