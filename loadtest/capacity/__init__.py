"""How much load a node group makes and holds, and what it costs: the instance catalog, worker sizing, the node-type
profiles, the planner, calibration, the targets' published figures and the EKS files of a plan. Pure core: no
processes."""
