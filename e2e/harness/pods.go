package harness

import "fmt"

// AddPod makes a "pod" in the VM: a network namespace with a veth to the node, address
// ip/32, a default route via 169.254.1.1 on the node side (as Calico does), and the
// agent serving as name on TCP/UDP 80 and 53.
func (n *Node) AddPod(name, ip string) error { return n.AddPodRunning(name, ip, "/agent serve "+name) }

// AddPodRunning is AddPod with server, a command run in the background in the pod's
// netns, as its server (the data-plane benchmark's pods run `/agent httpd NAME`).
func (n *Node) AddPodRunning(name, ip, server string) error {
	_, err := n.MustExec(fmt.Sprintf(`ip netns add %[1]s && ip link add h-%[1]s type veth peer name eth0 netns %[1]s &&
ip link set h-%[1]s up && ip addr add 169.254.1.1/32 dev h-%[1]s && ip route add %[2]s/32 dev h-%[1]s &&
ip netns exec %[1]s ip link set lo up && ip netns exec %[1]s ip link set eth0 up &&
ip netns exec %[1]s ip addr add %[2]s/32 dev eth0 &&
ip netns exec %[1]s ip route add 169.254.1.1 dev eth0 && ip netns exec %[1]s ip route add default via 169.254.1.1 &&
(/usr/sbin/ip netns exec %[1]s %[3]s < /dev/null > /tmp/pod-%[1]s.log 2>&1 &)`, name, ip, server))
	return err
}

// AddClient makes an "external" client netns at ip/24 on a veth from the node, whose
// node side is gw.
func (n *Node) AddClient(name, ip, gw string) error {
	_, err := n.MustExec(fmt.Sprintf(`ip netns add %[1]s && ip link add h-%[1]s type veth peer name eth0 netns %[1]s &&
ip link set h-%[1]s up && ip addr add %[3]s/24 dev h-%[1]s &&
ip netns exec %[1]s ip link set lo up && ip netns exec %[1]s ip link set eth0 up &&
ip netns exec %[1]s ip addr add %[2]s/24 dev eth0 && ip netns exec %[1]s ip route add default via %[3]s`, name, ip, gw))
	return err
}

// AddIPv6 gives an existing pod or client netns an IPv6 address too: ip6/128 for a pod
// (routed through gw6 on the node side of its veth), or ip6/64 for a client with gw6 as
// its node-side address and default route.
func (n *Node) AddIPv6(name, ip6, gw6 string, client bool) error {
	cmd := fmt.Sprintf(`echo 1 > /proc/sys/net/ipv6/conf/all/forwarding &&
ip -6 addr add %[3]s/128 dev h-%[1]s nodad && ip -6 route add %[2]s/128 dev h-%[1]s &&
ip netns exec %[1]s ip -6 addr add %[2]s/128 dev eth0 nodad &&
ip netns exec %[1]s ip -6 route add %[3]s/128 dev eth0 && ip netns exec %[1]s ip -6 route add default via %[3]s`, name, ip6, gw6)
	if client {
		cmd = fmt.Sprintf(`echo 1 > /proc/sys/net/ipv6/conf/all/forwarding &&
ip -6 addr add %[3]s/64 dev h-%[1]s nodad && ip netns exec %[1]s ip -6 addr add %[2]s/64 dev eth0 nodad &&
ip netns exec %[1]s ip -6 route add default via %[3]s`, name, ip6, gw6)
	}
	_, err := n.MustExec(cmd)
	return err
}
