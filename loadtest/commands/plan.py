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
    regions = [r.strip() for r in args.regions.split(",") if r.strip()] if args.regions else []
    if regions and args.region != clusterfiles.DEFAULT_REGION:
        raise UsageError(f"--region {args.region} with --regions: each written cluster is in its own region of "
                         "--regions; leave --region out")
    if len(set(regions)) < len(regions):
        raise UsageError(f"--regions {args.regions}: a region named twice; give each once")
    for option in OUTPUTS:
        if getattr(args, option):
            for path in region_paths(Path(getattr(args, option)), regions if option != "write_values" else []):
                paths.check_output(f"--{option.replace('_', '-')}", path, folder=False)
    calibration = load_calibration(Path(args.calibration) if args.calibration else None)
    # Several regions: the rate is split evenly, so every region gets the same node groups and one values file.
    target_rps = args.target_rps / len(regions) if regions else args.target_rps
    if regions:
        print(f"{args.target_rps:,.0f} RPS from {len(regions)} regions ({', '.join(regions)}): "
              f"{target_rps:,.0f} RPS each, one release in each region's cluster (docs/regions.md)\n")
    options = planner.plan(target_rps, args.scenario, node_types, args.headroom, calibration, args.max_nodes,
                           args.open_model)
    chosen = options[0]
    if args.choose:
        chosen = next((o for o in options if o.node_type == args.choose), None)
        if chosen is None:
            raise UsageError(f"--choose {args.choose}: not among the options that fit "
                             f"({', '.join(o.node_type for o in options)})")
    needed = target_rps * (1 + args.headroom)
    scenario = calibration.scenario(args.scenario)
    per_core = planner.per_core(calibration, args.scenario, args.open_model)
    print(f"{target_rps:,.0f} RPS of {args.scenario} + {args.headroom:.0%} headroom = {needed:,.0f} RPS; "
          f"{per_core:,.0f} RPS per worker core from {calibration.source}")
    if args.open_model:
        print(f"  open model: {arrival.CLOSED_SHARE * 100:.0f} % of the closed model's "
              f"{calibration.rps_per_core[args.scenario]:,.0f}, what a worker core holds on schedule "
              "(benchmarks/arrival.py);\n  install with --set locust.load.arrivalRate="
              f"{target_rps:.0f} --set locust.autostart.users=null" + (" in each region" if regions else ""))
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
    print(f"\nTarget side: {planner.target_suggestion(target_rps, scenario)}"
          + (" (in each region)" if regions else ""))
    if any(getattr(args, option) for option in OUTPUTS):
        write(args, chosen, calibration.source.split(" (")[0], regions)
    if regions:
        releases = " ".join(f"--release lt@{region}" for region in regions)
        print(f"\nRun all {len(regions)} as one test (each region's kube context named after it, e.g. `aws eks "
              f"update-kubeconfig --region REGION --name {args.cluster_name} --alias REGION`):\n"
              f"  loadtest run {releases} --run-time 5m")
    return 0


def region_paths(path: Path, regions: list[str]) -> list[Path]:
    """Where a file of each region goes: FILE as given for one region, else FILE's name with the region before its
    suffix (eks.yaml -> eks-us-east-1.yaml)."""
    return [path.with_name(f"{path.stem}-{region}{path.suffix}") for region in regions] or [path]


def write(args, chosen: planner.Option, source: str, regions: list[str]) -> None:
    """The values file, the eksctl ClusterConfig and the Karpenter NodePools of the chosen option, as asked (the
    cluster files one a region with --regions, the values file one for every region): all rendered before any is
    written, so a refusal leaves none half-made."""
    each = f" in each of {len(regions)} regions" if regions else ""
    profile = profiles.eks(chosen.node_type, chosen.nodes,
                           f"planned for {args.target_rps / max(1, len(regions)):,.0f} RPS of {args.scenario}{each}")
    assert profile.plan.replicas == chosen.plan.replicas, "the plan and the values file size the workers alike"
    asked = f"--target-rps {args.target_rps:g}" + (f" --regions {','.join(regions)}" if regions else "")

    def origin(path: Path) -> str:
        return f"{path}: written by `loadtest plan {asked} --scenario {args.scenario}` ({source})"

    values = args.write_values or "the values file of `loadtest plan ... --write-values FILE`"
    texts: dict[Path, str] = {}
    if args.write_values:
        texts[Path(args.write_values)] = valuesgen.render(profile, origin(Path(args.write_values)))
    clusters = dict(zip(region_paths(Path(args.write_cluster), regions), regions or [args.region])) \
        if args.write_cluster else {}
    for path, region in clusters.items():
        texts[path] = clusterfiles.cluster_config(profile, args.cluster_name, region, origin(path), values)
    karpenter = dict(zip(region_paths(Path(args.write_karpenter), regions), regions or [args.region])) \
        if args.write_karpenter else {}
    for path in karpenter:
        texts[path] = clusterfiles.karpenter(profile, args.cluster_name, origin(path), values)
    for path, text in texts.items():
        paths.write_text(path, text)
    if args.write_values:
        print(f"\nwrote {args.write_values}: helm install lt charts/loadtest -f {args.write_values}{each}")
    groups = " + ".join(f"{g.nodes} x {g.instance_type} ({g.name})" for g in clusterfiles.node_groups(profile))
    for path, region in clusters.items():
        print(f"\nwrote {path}: eksctl ClusterConfig in {region}, {groups}; {schemacheck.check_cluster_config(path)}")
        print(f"  Cost:   {clusterfiles.cost_line(profile)}")
        print(f"  Create: eksctl create cluster -f {path}   (then helm install lt charts/loadtest -f "
              f"{args.write_values or 'VALUES'})")
        print(f"  Delete: eksctl delete cluster -f {path} --disable-nodegroup-eviction")
    if len(clusters) > 1:
        print(f"\nAll {len(clusters)} regions: {len(clusters) * clusterfiles.hourly_usd(profile):g} USD/h on demand "
              f"({catalog.PRICE_REGION}'s prices in every region)")
    for path, region in karpenter.items():
        print(f"\nwrote {path}: Karpenter NodePools{f' for {region}' if regions else ''}, {groups}, and their "
              f"EC2NodeClass; {schemacheck.check_karpenter(path)}")
        print(f"  Apply:  kubectl apply -f {path}   (on a cluster running Karpenter; see the file's header)")


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
    p.add_argument("--regions", type=types.each(clusterfiles.check_region), metavar="REGION,REGION,...",
                   help="split the target RPS evenly over these AWS regions, one cluster and one release each "
                        "(docs/regions.md): --write-cluster and --write-karpenter write a file a region, FILE's name "
                        "with the region before its suffix; the values file serves every region")
    p.add_argument("--cluster-name", type=types.checked(clusterfiles.check_cluster_name),
                   default=clusterfiles.DEFAULT_CLUSTER,
                   help=f"name of the written cluster (default {clusterfiles.DEFAULT_CLUSTER})")
    p.set_defaults(func=run)
