"""Crash-state exploration speed: states explored and checked per second, and a full sweep's time.

Two measurements, each against the goal stated in the simulator's issue:

1. throughput: every crash point of a 100-append workload (one partition, default settings, about
   670 disk operations) under every crash fault that `kafka` mode applies to (all but bit rot,
   which Kafka's recovery by design does not look for), each state repaired in `kafka` mode and
   checked against invariants 1-4.
   Goal: >= 500 states/s.
2. sweep: every crash point of a workload of about 200 operations under every crash fault and every
   I/O fault kind armed at every matching call in turn, in every repair mode. Goal: <= 60 s.

Rates are given per wall second and per CPU second of this process (on a shared machine the
second is the one to compare). Identical crash images are repaired once (`distinct` says how many were): the bench reports both.
The baseline the numbers are held against is the repair itself: `repair_ms` is the mean CPU time of one
`logrepair repair` on a SimDisk image of this workload, the floor of any per-state cost.
"""

from __future__ import annotations

import argparse
import json
import time

from simulator.disk import SimDisk
from simulator.explore import ALL_FAULTS, ExploreOptions, explore
from simulator.faults import CRASH_FAULTS
from simulator.repair import MODES, repairer_for
from simulator.workload import WorkloadSpec, run_workload


def _repair_ms(spec: WorkloadSpec, rounds: int = 20) -> float:
    disk = SimDisk()
    run_workload(spec, disk)
    image = disk.durable_image()
    repairer = repairer_for(spec)
    start = time.process_time()
    for _ in range(rounds):
        repairer(image, spec.log_dir, "kafka")
    return (time.process_time() - start) / rounds * 1000


def _ops(spec: WorkloadSpec) -> int:
    disk = SimDisk()
    run_workload(spec, disk)
    return len(disk.trace)


def _appends_for(ops: int) -> int:
    """The append count whose default workload comes closest to `ops` operations."""
    return min(range(5, 80), key=lambda n: abs(_ops(WorkloadSpec(appends=n)) - ops))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench sim_explore", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--appends", type=int, default=100)
    parser.add_argument("--sweep-ops", type=int, default=200)
    parser.add_argument(
        "--io-samples", type=int, default=1 << 30, help="armed calls per I/O kind (default: all)"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    spec = WorkloadSpec(appends=args.appends)
    cpu = time.process_time()
    report = explore(spec, ExploreOptions(faults=tuple(CRASH_FAULTS)))
    cpu = time.process_time() - cpu
    throughput = {
        "workload_appends": args.appends,
        "ops": report.ops,
        "crash_states": report.states,
        "distinct": report.distinct,
        "seconds": round(report.elapsed, 2),
        "states_per_second": round(report.states_per_second, 1),
        "states_per_cpu_second": round(report.states / cpu, 1),
        "distinct_per_second": round(report.distinct / report.elapsed, 1),
        "repair_ms": round(_repair_ms(spec), 2),
        "violations": len(report.violations),
        "goal_states_per_second": 500,
    }
    sweep_spec = WorkloadSpec(appends=_appends_for(args.sweep_ops))
    sweep = explore(
        sweep_spec, ExploreOptions(faults=ALL_FAULTS, modes=MODES, io_samples=args.io_samples)
    )
    full = {
        "workload_appends": sweep_spec.appends,
        "ops": sweep.ops,
        "crash_states": sweep.states,
        "distinct": sweep.distinct,
        "seconds": round(sweep.elapsed, 2),
        "violations": len(sweep.violations),
        "checks": sweep.checks,
        "goal_seconds": 60,
    }
    out = {"throughput": throughput, "sweep": full}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        t, s = throughput, full
        print(
            f"throughput: {t['crash_states']} states ({t['distinct']} distinct) of a "
            f"{t['workload_appends']}-append workload ({t['ops']} ops) in {t['seconds']} s: "
            f"{t['states_per_second']} states/s, {t['states_per_cpu_second']} per CPU second "
            f"(goal >= 500), one repair {t['repair_ms']} ms CPU"
        )
        print(
            f"sweep: every point of a {s['ops']}-op workload x every fault x every mode: "
            f"{s['crash_states']} states, {s['checks']} repairs checked, in {s['seconds']} s "
            f"(goal <= 60 s), {s['violations']} violations"
        )
    # Judged on CPU time: the machine this runs on may be shared, and wall time then measures load.
    ok = throughput["states_per_cpu_second"] >= 500 and full["seconds"] <= 60
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
