"""How much load a node group makes and holds, and what it costs: the instance catalog, worker sizing, what the
chart's other pods request, the node-type profiles, the planner, calibration, the targets' published figures, the
EKS files of a plan and what a local run's machine holds. Pure core: no processes."""
