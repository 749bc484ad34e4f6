"""Long fuzz runs: `python -m tests.fuzz.run --cases 5000 [--seed 0] [--work DIR]`.

Prints one line per failing case (its seed and mutations) and a summary; exit 1 on any failure."""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

from .logdir_fuzzer import Outcome, run


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m tests.fuzz.run")
    p.add_argument("--seed", type=int, default=0, help="first seed")
    p.add_argument("--cases", type=int, default=500)
    p.add_argument("--work", help="scratch dir (default: a temp dir)")
    args = p.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="logrepair-fuzz-"))
    counts: collections.Counter[str] = collections.Counter()

    def report(out: Outcome) -> None:
        counts["cases"] += 1
        if counts["cases"] % 100 == 0:
            print(f"... {counts['cases']} cases", flush=True)
        counts.update(f"repaired {m}" for m in out.repaired)
        counts.update(f"refused {m}" for m in out.refused)
        if out.problems:
            print(f"seed {out.seed}: {'; '.join(out.mutations)}", flush=True)
            for line in out.problems:
                print("    " + line.replace("\n", "\n    "), flush=True)

    start = time.monotonic()
    failures = run(range(args.seed, args.seed + args.cases), work, report)
    print(
        f"{counts['cases']} cases in {time.monotonic() - start:.0f} s, {len(failures)} failing; "
        + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()) if k != "cases")
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
