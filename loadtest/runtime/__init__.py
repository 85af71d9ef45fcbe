"""The middle floor: processes, ports, tools, CPU metering, the Locust launcher, the local stack, the sweep drivers
and the local cluster. It imports the pure core below it, never the command line above."""
