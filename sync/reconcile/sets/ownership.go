package sets

import (
	"net/netip"
	"slices"

	"github.com/ipvs-proxier/ipvs-proxier/kernel"
	"github.com/ipvs-proxier/ipvs-proxier/proxier"
)

// Named returns the virtual servers our ownership sets name, read from the kernel once
// per full sync (ForgetNamed): for a virtual server on a node IP that we neither want nor
// know (a restart after its Service went).
func (r *Reconciler) Named() *OwnershipEntries {
	if r.named == nil {
		r.named = ReadOwnershipSets(r.cfg.Sets)
	}
	return r.named
}

// ForgetNamed has the next Named read the sets again: a full sync begins, before its
// sets are repaired.
func (r *Reconciler) ForgetNamed() { r.named = nil }

// ReadOwnershipSets lists proxier.OwnershipSets; a set that cannot be read names
// nothing, and nil Sets name nothing.
func ReadOwnershipSets(ipsets kernel.Sets) *OwnershipEntries {
	o := &OwnershipEntries{keys: map[kernel.VSKey]struct{}{}, ports: map[kernel.VSKey]struct{}{}}
	if ipsets == nil {
		return o
	}
	for _, set := range proxier.OwnershipSets() {
		entries, err := ipsets.ListEntries(set)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if k, anyAddress, ok := proxier.NamedKey(set, e); ok && anyAddress {
				o.ports[k] = struct{}{}
			} else if ok {
				o.keys[k] = struct{}{}
			}
		}
	}
	return o
}

// Merge adds what other names: the ownership sets of another rules backend on the node.
func (o *OwnershipEntries) Merge(other *OwnershipEntries) {
	if other == nil {
		return
	}
	for k := range other.keys {
		o.keys[k] = struct{}{}
	}
	for k := range other.ports {
		o.ports[k] = struct{}{}
	}
}

// names reports whether one of the sets names k.
func (o *OwnershipEntries) names(k kernel.VSKey) bool {
	if o == nil {
		return false
	}
	if _, ok := o.keys[k]; ok {
		return true
	}
	_, ok := o.ports[kernel.VSKey{Protocol: k.Protocol, Port: k.Port}]
	return ok
}

// Owns is the one ownership rule, shared by pruning and `ipvs-proxier cleanup`: a
// virtual server is ours when it is on an address of our dummy interface, or is on a
// node IP and either named by one of our sets (a NodePort of any range, an external or
// load-balancer IP equal to a node IP: the kernel's own record of what we programmed,
// which survives a restart) or in the NodePort range, or is on a link-local address and
// named by our sets (kube-proxy's NodePorts there); and it is not in an excluded CIDR
// (--ipvs-exclude-cidrs, kube-proxy's rule for virtual servers made by others).
func Owns(key kernel.VSKey, onDummy bool, nodeIPs []netip.Addr, exclude []netip.Prefix, portMin, portMax uint16, named *OwnershipEntries) bool {
	if slices.ContainsFunc(exclude, func(p netip.Prefix) bool { return p.Contains(key.Address) }) {
		return false
	}
	if onDummy {
		return true
	}
	if key.Address.IsLinkLocalUnicast() {
		// We program no NodePorts on link-local addresses, but kube-proxy's IPVS mode
		// does (169.254.x on a pod veth gateway): after a takeover, those our sets name
		// are kube-proxy's leftovers, ours to remove.
		return named.names(key)
	}
	if !slices.Contains(nodeIPs, key.Address) {
		return false
	}
	return key.Port >= portMin && key.Port <= portMax || named.names(key)
}

// OwnershipEntries are the virtual servers our ownership sets (proxier.OwnershipSets)
// name in the kernel, indexed so that each lookup is one map read.
type OwnershipEntries struct {
	keys  map[kernel.VSKey]struct{} // by protocol, address and port
	ports map[kernel.VSKey]struct{} // by protocol and port only (bitmap:port NodePorts)
}
