"""What a run or a sweep measured and what it means: the verdict, the checks, the saturation rules, the knee, results
folders and their history, comparisons, sweep reports and the tuning loop's decision. Pure core: no processes."""
