"""`audit --report FILE.html`: one self-contained page (charts as base64 PNG, no external links).

An SRE mails it or opens it from a jump host with no network, so nothing may be fetched: the
stylesheet is inline and every chart is a matplotlib PNG embedded as a data: URI.
"""

from __future__ import annotations

import base64
import html
import io
from collections import Counter, defaultdict

from .model import AuditReport

_MAX_BARS = 40
"""Charts keep the largest bars only: a fleet of thousands of partitions is unreadable as bars."""


def render_html(report: AuditReport, *, title: str = "logrepair audit") -> str:
    """The whole page as one string."""
    import matplotlib

    matplotlib.use("Agg")  # no display on a server; must precede pyplot
    charts = [
        ("Bytes past the recovery point, per broker and topic", _unflushed_chart(report)),
        ("Findings by kind", _findings_chart(report)),
        ("Replica divergence", _replica_chart(report)),
    ]
    body = [f"<h1>{html.escape(title)}</h1>", _summary(report)]
    for heading, png in charts:
        body.append(f"<h2>{html.escape(heading)}</h2>")
        body.append(
            f'<img alt="{html.escape(heading)}" src="data:image/png;base64,{png}">'
            if png
            else "<p class=none>Nothing to show.</p>"
        )
    body.append("<h2>Findings</h2>")
    body.append(_findings_table(report))
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
        + "\n".join(body)
        + "</body></html>\n"
    )


_CSS = (
    "body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left;font-size:90%}"
    "th{background:#eee}.bad{color:#b00}.ok{color:#070}img{max-width:100%}.none{color:#777}"
)


def _summary(report: AuditReport) -> str:
    status = "<span class=ok>clean</span>" if report.clean else "<span class=bad>findings</span>"
    brokers = sorted({d.broker for d in report.log_dirs})
    unclean = sum(d.recovery_seconds for d in report.log_dirs)
    rows = [
        ("status", status),
        ("log dirs", str(len(report.log_dirs))),
        ("brokers", str(len(brokers))),
        ("partitions", str(len(report.partitions))),
        ("findings", str(len(report.all_findings()))),
        (
            "bytes past the recovery point",
            format_bytes(sum(p.unflushed_bytes for p in report.partitions)),
        ),
        (
            "recovery work at the next unclean start",
            f"{format_bytes(sum(d.recovery_bytes for d in report.log_dirs))}, about {unclean:.1f} s "
            f"of log-dir time at {format_bytes(report.recovery_rate)}/s",
        ),
    ]
    cells = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
    return f"<table>{cells}</table>"


def _findings_table(report: AuditReport) -> str:
    found = report.all_findings()
    if not found:
        return "<p class=none>No findings.</p>"
    rows = "".join(
        f"<tr><td>{html.escape(where or scope)}</td><td>{html.escape(f.kind)}</td>"
        f"<td>{html.escape(f.detail)}</td></tr>"
        for scope, where, f in found
    )
    return f"<table><tr><th>where</th><th>kind</th><th>detail</th></tr>{rows}</table>"


def _unflushed_chart(report: AuditReport) -> str | None:
    per: dict[str, Counter] = defaultdict(Counter)
    for p in report.partitions:
        if p.unflushed_bytes:
            per[p.broker][p.topic] += p.unflushed_bytes
    if not per:
        return None
    brokers = sorted(per, key=lambda b: -sum(per[b].values()))[:_MAX_BARS]
    topics = sorted({t for b in brokers for t in per[b]})
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 0.4 * len(brokers) + 1.5))
    top = max(sum(per[b].values()) for b in brokers)
    unit, scale = next(
        (u, f)
        for u, f in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10), ("bytes", 1))
        if top >= f
    )
    left = [0.0] * len(brokers)
    for topic in topics:
        widths = [per[b][topic] / scale for b in brokers]
        ax.barh(brokers, widths, left=left, label=topic)
        left = [x + w for x, w in zip(left, widths, strict=True)]
    ax.set_xlabel(f"{unit} past the recovery point")
    ax.invert_yaxis()
    if len(topics) <= 20:
        ax.legend(fontsize="small", loc="lower right")
    return _png(fig)


def _findings_chart(report: AuditReport) -> str | None:
    kinds = Counter(f.kind for _, _, f in report.all_findings())
    if not kinds:
        return None
    import matplotlib.pyplot as plt

    items = kinds.most_common(_MAX_BARS)
    fig, ax = plt.subplots(figsize=(9, 0.35 * len(items) + 1.5))
    ax.barh([k for k, _ in items], [n for _, n in items], color="#b03030")
    ax.set_xlabel("findings")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.invert_yaxis()
    return _png(fig)


def _replica_chart(report: AuditReport) -> str | None:
    """Per replica set that differs: each replica's log as a bar up to its log end, blue where it
    agrees with the longest replica and red from where it diverges; a tick at the high watermark."""
    sets = [r for r in report.replicas if r.findings or len(set(r.log_end_offsets)) > 1]
    if not sets:
        return None
    sets.sort(
        key=lambda r: (r.diverged_at is None, -(max(r.log_end_offsets) - min(r.log_end_offsets)))
    )
    sets = sets[:_MAX_BARS]
    import matplotlib.pyplot as plt

    rows = [(r, i) for r in sets for i in range(len(r.paths))]
    fig, ax = plt.subplots(figsize=(9, 0.3 * len(rows) + 1.5))
    labels = []
    for y, (r, i) in enumerate(rows):
        leo = r.log_end_offsets[i]
        split = r.diverged_at if r.paths[i] in r.diverged_paths else None
        agree = leo if split is None else min(split, leo)
        ax.barh(y, agree, color="#3060b0")
        if split is not None and leo > split:
            ax.barh(y, leo - split, left=split, color="#b03030")
        hw = r.high_watermarks[i]
        if hw is not None:
            ax.plot([hw, hw], [y - 0.4, y + 0.4], color="black", linewidth=1)
        labels.append(f"{r.topic}-{r.partition} @ {r.brokers[i]}")
    ax.set_yticks(range(len(rows)), labels, fontsize=8)
    ax.set_xlabel(
        "offset (blue: agrees with the longest replica, red: diverged; tick: high watermark)"
    )
    ax.invert_yaxis()
    return _png(fig)


def _png(fig) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def format_bytes(n: float) -> str:
    unit = "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            break
        n /= 1024
    return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
