"""`loadtest`: size Locust workers for a node type, keep the values files in step, run the local stack.

Exit codes: 0 success, 1 a check or a measured result failed, 2 bad input.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from . import catalog, paths, planner, profiles, sizing, units, valuesdoc, valuesgen

# Modules that add their own sub-commands through register(subparsers).
COMMAND_MODULES = ("loadtest.local", "loadtest.calibrate", "loadtest.sweep", "loadtest.localcluster",
                   "loadtest.dashboards")


class UsageError(Exception):
    """Bad input: printed as `loadtest: error: …` with exit code 2."""


def cmd_catalog(args) -> int:
    print(f"{'type':<14}{'vCPU':>5}{'GiB':>7}{'alloc CPU':>11}{'pods':>6}{'USD/h':>8}{'USD/mo':>9}{'Gbps':>7}")
    for i in catalog.INSTANCES.values():
        print(
            f"{i.name:<14}{i.vcpu:>5}{i.memory_gib:>7g}{i.allocatable_cpu_m:>10}m{i.max_pods:>6}"
            f"{i.price_usd_hour:>8.3f}{i.monthly_usd:>9.0f}{i.network_gbps_baseline:>7g}"
        )
    return 0


def cmd_size(args) -> int:
    try:
        shape = sizing.node_shape(catalog.get(args.node_type))
        worker_cpu = units.parse_cpu_m(args.worker_cpu)
        worker_mem = units.parse_memory_mi(args.worker_memory)
        plan = sizing.plan_workers(shape, args.nodes, worker_cpu_m=worker_cpu, worker_memory_mi=worker_mem)
    except ValueError as e:
        raise UsageError(str(e)) from None
    print(f"{args.nodes} x {args.node_type}: {plan.replicas} workers at {units.cpu(worker_cpu)}")
    for line in plan.explain():
        print(f"  {line}")
    print(
        f"\nhelm upgrade --install lt charts/loadtest --reuse-values --set locust.nodeType={args.node_type} "
        f"--set locust.worker.replicas={plan.replicas} --set locust.worker.cpu={units.cpu(worker_cpu)}"
    )
    return 0


def cmd_plan(args) -> int:
    node_types = [t.strip() for t in args.node_types.split(",") if t.strip()]
    try:
        calibration = planner.load_calibration(Path(args.calibration) if args.calibration else None)
        options = planner.plan(args.target_rps, args.scenario, node_types, args.headroom, calibration,
                               args.max_nodes)
        chosen = next(o for o in options if o.node_type == args.choose) if args.choose else options[0]
    except (ValueError, KeyError) as e:
        raise UsageError(str(e)) from None
    except StopIteration:
        raise UsageError(f"--choose {args.choose}: not among the options that fit") from None
    needed = args.target_rps * (1 + args.headroom)
    per_core = calibration.rps_per_core[args.scenario]
    print(f"{args.target_rps:,.0f} RPS of {args.scenario} + {args.headroom:.0%} headroom = {needed:,.0f} RPS; "
          f"{per_core:,.0f} RPS per worker core from {calibration.source}")
    print(f"\n{'node type':<13}{'nodes':>6}{'workers':>8}{'master':>8}{'expected RPS':>14}{'USD/month':>11}"
          f"{'USD/1k RPS':>12}  note")
    for o in options:
        note = "network-bound (baseline bandwidth)" if o.bandwidth_limited else ""
        print(f"{o.node_type:<13}{o.nodes:>6}{o.plan.replicas:>8}{units.cpu(o.plan.master.cpu_m):>8}"
              f"{o.expected_rps:>14,.0f}{o.monthly_usd:>11,.0f}{o.usd_per_1k_rps:>12.2f}  {note}")
    print(f"\nCheapest: {options[0].node_type}. Arithmetic for {chosen.node_type} x {chosen.nodes}:")
    for line in chosen.plan.explain():
        print(f"  {line}")
    cap = planner.bandwidth_rps(chosen.instance, planner.SCENARIOS[args.scenario])
    print(f"  Network: {chosen.instance.network_gbps_baseline:g} Gbps baseline per node = {cap:,.0f} RPS per node "
          f"at {planner.SCENARIOS[args.scenario].wire_bytes:,} bytes per request")
    print(f"\nTarget side: {planner.target_suggestion(args.target_rps, args.scenario)}")
    if args.write_values:
        profile = profiles.eks(chosen.node_type, chosen.nodes,
                               f"planned for {args.target_rps:,.0f} RPS of {args.scenario}")
        origin = (f"{args.write_values}: written by `loadtest plan --target-rps {args.target_rps:g} "
                  f"--scenario {args.scenario}` ({calibration.source.split(' (')[0]})")
        Path(args.write_values).write_text(valuesgen.render(profile, origin))
        print(f"\nwrote {args.write_values}: helm install lt charts/loadtest -f {args.write_values}")
    return 0


def shown(path) -> str:
    return str(path.relative_to(paths.REPO)) if path.is_relative_to(paths.REPO) else str(path)


def cmd_values(args) -> int:
    if args.check:
        stale = valuesgen.stale_files()
        for p in stale:
            print(f"out of date: {shown(p)}")
        if stale:
            print("run `loadtest values` and commit the result", file=sys.stderr)
            return 1
        print("values files and schema enums match the catalog")
        return 0
    written = valuesgen.write()
    for p in written:
        print(f"wrote {shown(p)}")
    if not written:
        print("everything already up to date")
    return 0


def cmd_docs(args) -> int:
    readme = paths.REPO / "README.md"
    try:
        text = valuesdoc.updated_readme(readme)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if text == readme.read_text():
        print("README values reference is up to date")
        return 0
    if args.check:
        print("README values reference is out of date: run `loadtest docs` and commit the result", file=sys.stderr)
        return 1
    readme.write_text(text)
    print("wrote README.md values reference")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="loadtest", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="command")

    p = sub.add_parser("catalog", help="list the node types the sizing knows")
    p.set_defaults(func=cmd_catalog)

    p = sub.add_parser("size", help="workers that fit N nodes of a type, with the arithmetic")
    p.add_argument("--node-type", required=True, help="EC2 instance type, e.g. c5.xlarge (see `loadtest catalog`)")
    p.add_argument("--nodes", type=int, default=2, help="nodes in the generator node group (default 2)")
    p.add_argument("--worker-cpu", default=units.cpu(sizing.WORKER_CPU_M),
                   help="CPU per worker, request = limit (default 1000m: a worker uses one core)")
    p.add_argument("--worker-memory", default=units.memory(sizing.WORKER_MEMORY_MI),
                   help="memory per worker (default 512Mi)")
    p.set_defaults(func=cmd_size)

    p = sub.add_parser("plan", help="node types, workers and cost to reach a target RPS, cheapest first")
    p.add_argument("--target-rps", type=float, required=True, help="RPS the test must reach")
    p.add_argument("--scenario", default="keepalive_1kb", help=f"one of {', '.join(planner.SCENARIOS)}")
    p.add_argument("--node-types", default="c5.large,c5.xlarge,c5.2xlarge,c5.4xlarge,m5.large,m5.xlarge",
                   help="comma-separated EC2 types to compare (see `loadtest catalog`)")
    p.add_argument("--headroom", type=float, default=0.3, help="extra capacity as a fraction (default 0.3)")
    p.add_argument("--max-nodes", type=int, default=planner.MAX_NODES, help="largest node group to consider")
    p.add_argument("--calibration", help=f"calibration file (default {planner.DEFAULT_CALIBRATION})")
    p.add_argument("--choose", help="node type to explain and write values for (default: the cheapest)")
    p.add_argument("--write-values", metavar="FILE", help="write a values file for the chosen option")
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("values", help="regenerate values/*.yaml and the schema's node-type enum from the catalog")
    p.add_argument("--check", action="store_true", help="only report files that differ (exit 1 if any)")
    p.set_defaults(func=cmd_values)

    p = sub.add_parser("docs", help="regenerate README's values reference from the values.yaml comments")
    p.add_argument("--check", action="store_true", help="only report whether README is stale (exit 1 if so)")
    p.set_defaults(func=cmd_docs)

    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except UsageError as e:
        parser.exit(2, f"loadtest: error: {e}\n")
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
