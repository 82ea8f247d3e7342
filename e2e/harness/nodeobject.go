package harness

import "context"

// RegisterNode creates the Node object name with InternalIP ip, zone and hostname
// labels, as StartNode does before booting its VM: for tests that need the object and
// no node (the soak's churn against the apiserver alone).
func (cp *ControlPlane) RegisterNode(ctx context.Context, name, ip string) error {
	return cp.registerNode(ctx, name, ip)
}
