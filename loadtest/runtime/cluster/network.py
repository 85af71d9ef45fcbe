"""The local cluster's addresses, all inside 198.18.0.0/15, which RFC 2544 reserves for benchmarking: they cannot
collide with the 10/8, 172.16/12 or 192.168/16 networks of the machine, its VPN or a real cluster it can reach."""
from __future__ import annotations

import ipaddress

SERVICE_CIDR = "198.19.0.0/16"
# The `kubernetes` Service takes the first address of the Service range; the apiserver's certificate names it.
SERVICE_IP = str(next(ipaddress.ip_network(SERVICE_CIDR).hosts()))
# The cluster DNS Service (CoreDNS on the real node), the address every pod's resolv.conf names.
DNS_IP = str(ipaddress.ip_network(SERVICE_CIDR).network_address + 10)
# Every pod address. KWOK hands out the simulated pods' from the lower half (its default /24 runs out at 254 pods),
# the real node's CNI bridge its own pods' from one /24 of the upper half.
POD_CIDR = "198.18.0.0/16"
KWOK_POD_CIDR = "198.18.0.0/17"
NODE_POD_CIDR = "198.18.128.0/24"
# The real node's address: the bridge's, the pods' gateway. The apiserver listens there too when a real node is up,
# since pods cannot reach this machine's loopback.
NODE_IP = str(next(ipaddress.ip_network(NODE_POD_CIDR).hosts()))
