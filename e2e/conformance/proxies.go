package conformance

// A Proxy is one service proxy the suite runs against, and one column of the report.
type Proxy struct {
	Name    string // -proxies and the CSV column
	Title   string // in the report's tables and prose
	Ours    bool   // ipvs-proxier, with either rules backend
	Default bool   // run by `make conformance` unless CONFORMANCE_PROXIES says otherwise
}

// KubeRouterTitle names kube-router with its version in every table: v2.1.0 is the only
// version the Go module proxy serves here (harness.KubeRouterVersion; a test in run/
// keeps the two equal), and it predates kube-router's externalIPs advisory
// GHSA-phqm-jgc3-qf8g, fixed in v2.8.0.
const KubeRouterTitle = "kube-router v2.1.0"

// KubeRouterAdvisory is the report's line under each table that shows kube-router.
const KubeRouterAdvisory = KubeRouterTitle + " is the only kube-router version served here; it predates kube-router's " +
	"externalIPs advisory GHSA-phqm-jgc3-qf8g (fixed in v2.8.0)."

// Table is every proxy, in the report's column order: the peers, then ours.
// kube-proxy-ipvs is the reference a regression is counted against; kube-proxy-nftables
// (kubeadm's manifest with `mode: nftables`) and kube-router (its service proxy alone)
// are peers whose passes ours is held to as well; ipvs-proxier-nftables is ours with
// `rulesBackend: nftables`.
var Table = []Proxy{
	{Name: "kube-proxy-ipvs", Title: "kube-proxy IPVS", Default: true},
	{Name: "kube-proxy-nftables", Title: "kube-proxy nftables"},
	{Name: "kube-router", Title: KubeRouterTitle},
	{Name: "ipvs-proxier", Title: "ipvs-proxier", Ours: true, Default: true},
	{Name: "ipvs-proxier-nftables", Title: "ipvs-proxier (nftables)", Ours: true},
}

// Reference and Main are the pair a regression compares: a test kube-proxy's IPVS mode
// passes and ipvs-proxier (its default backend) fails.
const (
	Reference = "kube-proxy-ipvs"
	Main      = "ipvs-proxier"
)

// Columns are the proxies' names in the report's order.
func Columns() []string {
	out := make([]string, len(Table))
	for i, p := range Table {
		out[i] = p.Name
	}
	return out
}

// Defaults are the proxies `make conformance` runs unless told otherwise; a run of
// both writes the docs.
func Defaults() []string {
	var out []string
	for _, p := range Table {
		if p.Default {
			out = append(out, p.Name)
		}
	}
	return out
}

// Lookup is the proxy of that name.
func Lookup(name string) (Proxy, bool) {
	for _, p := range Table {
		if p.Name == name {
			return p, true
		}
	}
	return Proxy{}, false
}

// title is a proxy's title, or its name when the table lacks it.
func title(name string) string {
	if p, ok := Lookup(name); ok {
		return p.Title
	}
	return name
}
