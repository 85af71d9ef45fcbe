"""`loadtest plan`: node types, workers and cost to reach a target RPS, cheapest first, with the arithmetic."""
from __future__ import annotations

from pathlib import Path

from .. import paths, units
from ..capacity import catalog, clusterfiles, planner, profiles
from ..capacity.calibration import DEFAULT_FILE, load_calibration
from ..errors import UsageError
from ..generate import valuesgen
from ..runtime import schemacheck
from ..workload import arrival, scenarios
from . import types

OUTPUTS = ("write_values", "write_cluster", "write_karpenter")


def run(args) -> int:
    node_types = [t.strip() for t in args.node_types.split(",") if t.strip()]
    for option in OUTPUTS:
        if getattr(args, option):
            paths.check_output(f"--{option.replace('_', '-')}", Path(getattr(args, option)), folder=False)
    calibration = load_calibration(Path(args.calibration) if args.calibration else None)
    options = planner.plan(args.target_rps, args.scenario, node_types, args.headroom, calibration, args.max_nodes,
                           args.open_model)
    chosen = options[0]
    if args.choose:
        chosen = next((o for o in options if o.node_type == args.choose), None)
        if chosen is None:
            raise UsageError(f"--choose {args.choose}: not among the options that fit "
                             f"({', '.join(o.node_type for o in options)})")
    needed = args.target_rps * (1 + args.headroom)
    scenario = calibration.scenario(args.scenario)
    per_core = planner.per_core(calibration, args.scenario, args.open_model)
    print(f"{args.target_rps:,.0f} RPS of {args.scenario} + {args.headroom:.0%} headroom = {needed:,.0f} RPS; "
          f"{per_core:,.0f} RPS per worker core from {calibration.source}")
    if args.open_model:
        print(f"  open model: {arrival.CLOSED_SHARE * 100:.0f} % of the closed model's "
              f"{calibration.rps_per_core[args.scenario]:,.0f}, what a worker core holds on schedule "
              "(benchmarks/arrival.py);\n  install with --set locust.load.arrivalRate="
              f"{args.target_rps:.0f} --set locust.autostart.users=null")
    print(f"\n{'node type':<13}{'nodes':>6}{'workers':>8}{'master':>8}{'expected RPS':>14}{'USD/month':>11}"
          f"{'USD/1k RPS':>12}  note")
    for o in options:
        note = "network-bound (baseline bandwidth)" if o.bandwidth_limited else ""
        print(f"{o.node_type:<13}{o.nodes:>6}{o.plan.replicas:>8}{units.cpu(o.plan.master.cpu_m):>8}"
              f"{o.expected_rps:>14,.0f}{o.monthly_usd:>11,.0f}{o.usd_per_1k_rps:>12.2f}  {note}")
    print(f"\nCheapest: {options[0].node_type}. Arithmetic for {chosen.node_type} x {chosen.nodes}:")
    for line in chosen.plan.explain():
        print(f"  {line}")
    cap = planner.bandwidth_rps(chosen.instance, scenario)
    print(f"  Network: {chosen.instance.network_gbps_baseline:g} Gbps baseline per node = {cap:,.0f} RPS per node "
          f"at {scenario.wire_bytes:,} bytes per request")
    print(f"\nTarget side: {planner.target_suggestion(args.target_rps, scenario)}")
    if any(getattr(args, option) for option in OUTPUTS):
        write(args, chosen, calibration.source.split(" (")[0])
    return 0


def write(args, chosen: planner.Option, source: str) -> None:
    """The values file, the eksctl ClusterConfig and the Karpenter NodePools of the chosen option, as asked: all
    rendered before any is written, so a refusal leaves none half-made."""
    profile = profiles.eks(chosen.node_type, chosen.nodes, f"planned for {args.target_rps:,.0f} RPS of {args.scenario}")
    assert profile.plan.replicas == chosen.plan.replicas, "the plan and the values file size the workers alike"

    def origin(path: str) -> str:
        return (f"{path}: written by `loadtest plan --target-rps {args.target_rps:g} --scenario {args.scenario}` "
                f"({source})")

    values = args.write_values or "the values file of `loadtest plan ... --write-values FILE`"
    texts = {}
    if args.write_values:
        texts[args.write_values] = valuesgen.render(profile, origin(args.write_values))
    if args.write_cluster:
        texts[args.write_cluster] = clusterfiles.cluster_config(profile, args.cluster_name, args.region,
                                                                origin(args.write_cluster), values)
    if args.write_karpenter:
        texts[args.write_karpenter] = clusterfiles.karpenter(profile, args.cluster_name, origin(args.write_karpenter),
                                                             values)
    for path, text in texts.items():
        paths.write_text(Path(path), text)
    if args.write_values:
        print(f"\nwrote {args.write_values}: helm install lt charts/loadtest -f {args.write_values}")
    groups = " + ".join(f"{g.nodes} x {g.instance_type} ({g.name})" for g in clusterfiles.node_groups(profile))
    if args.write_cluster:
        print(f"\nwrote {args.write_cluster}: eksctl ClusterConfig, {groups}; "
              f"{schemacheck.check_cluster_config(Path(args.write_cluster))}")
        print(f"  Cost:   {clusterfiles.cost_line(profile)}")
        print(f"  Create: eksctl create cluster -f {args.write_cluster}   (then helm install lt charts/loadtest -f "
              f"{args.write_values or 'VALUES'})")
        print(f"  Delete: eksctl delete cluster -f {args.write_cluster} --disable-nodegroup-eviction")
    if args.write_karpenter:
        print(f"\nwrote {args.write_karpenter}: Karpenter NodePools, {groups}, and their EC2NodeClass; "
              f"{schemacheck.check_karpenter(Path(args.write_karpenter))}")
        print(f"  Apply:  kubectl apply -f {args.write_karpenter}   (on a cluster running Karpenter; see the file's "
              "header)")


def register(sub) -> None:
    p = sub.add_parser("plan", help="node types, workers and cost to reach a target RPS, cheapest first",
                       description=__doc__)
    p.add_argument("--target-rps", type=types.number(float, minimum=1), required=True, help="RPS the test must reach")
    p.add_argument("--scenario", default=scenarios.DEFAULT,
                   help=f"what each request does: {', '.join(scenarios.SCENARIOS)} (default {scenarios.DEFAULT}), or "
                        "the name of a test of yours measured with `loadtest calibrate -f`")
    p.add_argument("--node-types", type=types.each(catalog.get), default="c5.large,c5.xlarge,c5.2xlarge,c5.4xlarge,m5.large,m5.xlarge",
                   help="comma-separated EC2 types to compare (see `loadtest catalog`)")
    p.add_argument("--open-model", action="store_true",
                   help="the target RPS is an arrival rate (--arrival-rate, locust.load.arrivalRate): plan the workers "
                        f"to hold it on schedule, {arrival.CLOSED_SHARE * 100:.0f} %% of the closed model's RPS per core")
    p.add_argument("--headroom", type=types.number(float, minimum=0, maximum=4), default=0.3, help="extra capacity as a fraction (default 0.3)")
    p.add_argument("--max-nodes", type=types.number(int, minimum=1), default=planner.MAX_NODES, help="largest node group to consider")
    p.add_argument("--calibration", help=f"calibration file (default {DEFAULT_FILE})")
    p.add_argument("--choose", help="node type to explain and write values for (default: the cheapest)")
    p.add_argument("--write-values", metavar="FILE", help="write a values file for the chosen option")
    p.add_argument("--write-cluster", metavar="FILE",
                   help="write an eksctl ClusterConfig with the chosen option's two node groups (the generator's and "
                        "the targets'), checked against eksctl's schema when set-up has fetched it")
    p.add_argument("--write-karpenter", metavar="FILE",
                   help="write Karpenter NodePools (and their EC2NodeClass) for the same node groups, each limited to "
                        "its instance type and planned CPU, checked against Karpenter's CRDs when set-up has fetched "
                        "them")
    p.add_argument("--region", type=types.checked(clusterfiles.check_region), default=clusterfiles.DEFAULT_REGION,
                   help=f"AWS region of the written cluster (default {clusterfiles.DEFAULT_REGION}, where the prices "
                        "are from)")
    p.add_argument("--cluster-name", type=types.checked(clusterfiles.check_cluster_name),
                   default=clusterfiles.DEFAULT_CLUSTER,
                   help=f"name of the written cluster (default {clusterfiles.DEFAULT_CLUSTER})")
    p.set_defaults(func=run)
