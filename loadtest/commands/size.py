"""`loadtest size`: how many one-core workers fit N nodes of a type, with the arithmetic."""
from __future__ import annotations

from .. import units
from ..capacity import catalog, sizing
from ..errors import UsageError
from . import types


def run(args) -> int:
    shape = sizing.node_shape(catalog.get(args.node_type))
    worker_cpu = units.parse_cpu_m(args.worker_cpu)
    worker_mem = units.parse_memory_mi(args.worker_memory)
    plan = sizing.plan_workers(shape, args.nodes, worker_cpu_m=worker_cpu, worker_memory_mi=worker_mem)
    if plan.replicas == 0:
        raise UsageError(f"--worker-cpu {units.cpu(worker_cpu)} --worker-memory {units.memory(worker_mem)}: no worker "
                         f"fits a {args.node_type} beside its DaemonSets and the master ({'; '.join(plan.explain())}); "
                         "give smaller workers or a larger --node-type")
    print(f"{args.nodes} x {args.node_type}: {plan.replicas} workers at {units.cpu(worker_cpu)}")
    if warning := sizing.thin_worker_warning(worker_cpu):
        print(f"  WARNING: {warning}")
    for line in plan.explain():
        print(f"  {line}")
    print(
        f"\nhelm upgrade --install lt charts/loadtest --reuse-values --set locust.nodeType={args.node_type} "
        f"--set locust.worker.replicas={plan.replicas} --set locust.worker.cpu={units.cpu(worker_cpu)}"
    )
    return 0


def register(sub) -> None:
    p = sub.add_parser("size", help="workers that fit N nodes of a type, with the arithmetic", description=__doc__)
    p.add_argument("--node-type", required=True, type=types.checked(catalog.get), help="EC2 instance type, e.g. c5.xlarge (see `loadtest catalog`)")
    p.add_argument("--nodes", type=types.number(int, minimum=1), default=2, help="nodes in the generator node group (default 2)")
    p.add_argument("--worker-cpu", type=types.checked(lambda text: units.parse_cpu_m(text, at_least=1)), default=units.cpu(sizing.WORKER_CPU_M),
                   help="CPU per worker, request = limit (default 1000m: a worker uses one core)")
    p.add_argument("--worker-memory", type=types.checked(lambda text: units.parse_memory_mi(text, at_least=1)), default=units.memory(sizing.WORKER_MEMORY_MI),
                   help="memory per worker (default 512Mi)")
    p.set_defaults(func=run)
