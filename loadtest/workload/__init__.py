"""What is run: the scenarios, the targets, a user's own test, the open model's arithmetic and a sweep's plan. Pure
core: no processes."""
