"""`loadtest`: size Locust workers for a node type, keep the values files in step, run the local stack.

Exit codes: 0 success, 1 a check or a measured result failed, 2 bad input.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from . import catalog, paths, sizing, units, valuesdoc, valuesgen

# Modules that add their own sub-commands through register(subparsers).
COMMAND_MODULES = ("loadtest.local", "loadtest.localcluster")


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

    p = sub.add_parser("values", help="regenerate values/*.yaml and the schema's node-type enum from the catalog")
    p.add_argument("--check", action="store_true", help="only report files that differ (exit 1 if any)")
    p.set_defaults(func=cmd_values)

    p = sub.add_parser("docs", help="regenerate README's values reference from the values.yaml comments")
    p.add_argument("--check", action="store_true", help="only report whether README is stale (exit 1 if so)")
    p.set_defaults(func=cmd_docs)

    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name != name:
                raise
            continue
        module.register(sub)
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
