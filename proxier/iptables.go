package proxier

// Chains ipvs-proxier owns. The first group carries kube-proxy's names, so a node taken
// over from kube-proxy's IPVS mode keeps the same chains (pkg/proxy/ipvs/proxier.go).
const (
	chainServices            = "KUBE-SERVICES"
	chainPostrouting         = "KUBE-POSTROUTING"
	chainMarkMasq            = "KUBE-MARK-MASQ"
	chainNodePort            = "KUBE-NODE-PORT"
	chainLoadBalancer        = "KUBE-LOAD-BALANCER"
	chainForward             = "KUBE-FORWARD"
	chainProxyFirewall       = "KUBE-PROXY-FIREWALL"
	chainSourceRangeFirewall = "KUBE-SOURCE-RANGES-FIREWALL"
	chainIPVSFilter          = "KUBE-IPVS-FILTER"
	chainIPVSOutFilter       = "KUBE-IPVS-OUT-FILTER"
	// chainExternalNoLocal drops traffic from outside the cluster to ETP=Local services
	// with no local endpoint; kube-proxy's IPVS mode forwards it to remote pods instead.
	chainExternalNoLocal = "KUBE-EXTERNAL-NO-LOCAL"
)

// RuleChains lists our chains per table, in the order they are declared.
var RuleChains = map[string][]string{
	"nat": {chainServices, chainPostrouting, chainNodePort, chainLoadBalancer, chainMarkMasq},
	"filter": {chainForward, chainNodePort, chainProxyFirewall, chainSourceRangeFirewall, chainIPVSFilter, chainIPVSOutFilter, chainExternalNoLocal,
		chainClusterIPsCheck},
}
