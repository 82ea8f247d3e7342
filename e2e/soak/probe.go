package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ipvs-proxier/ipvs-proxier/e2e/harness"
)

// probeService is a Service apart from the churn and the traffic, whose endpoint the
// soak replaces to time a change end to end: the write acknowledged, then the
// node's IPVS table showing it (host clock), and to see the daemon follow changes again
// after a fault.
const probeService = "soak-probe"

// prober times changes of the probe Service. Safe for concurrent use: one change at a time.
type prober struct {
	mu   sync.Mutex
	c    kubernetes.Interface
	node *harness.Node
	vip  string
	n    int
}

// newProber creates the probe Service.
func newProber(ctx context.Context, c kubernetes.Interface, node *harness.Node) (*prober, error) {
	svc, err := c.CoreV1().Services("default").Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: probeService},
		Spec: v1.ServiceSpec{Ports: []v1.ServicePort{{Name: "p", Port: 80, Protocol: v1.ProtocolTCP}}}}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	return &prober{c: c, node: node, vip: svc.Spec.ClusterIP}, nil
}

// change gives the probe Service a new endpoint and returns how long the node took to
// show it, or an error when it did not within timeout (or the write failed: the
// apiserver may be down, in which case the write is retried until timeout).
func (p *prober) change(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.changeLocked(ctx, timeout)
}

// errProbeBusy says another change of the probe is under way (a fault's recovery check).
var errProbeBusy = errors.New("the probe is busy")

// tryChange is change, unless another change is under way.
func (p *prober) tryChange(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	if !p.mu.TryLock() {
		return 0, errProbeBusy
	}
	defer p.mu.Unlock()
	return p.changeLocked(ctx, timeout)
}

func (p *prober) changeLocked(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	p.n++
	ip := fmt.Sprintf("10.250.%d.%d", (p.n>>8)&255, p.n&255)
	deadline := time.Now().Add(timeout)
	sl := harness.ReadySlice(probeService, probeService+"-1", 80, v1.ProtocolTCP, harness.Endpoint{IP: ip, Node: nodeName})
	api := p.c.DiscoveryV1().EndpointSlices("default")
	for {
		cur, err := api.Get(ctx, sl.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = api.Create(ctx, sl, metav1.CreateOptions{})
		} else if err == nil {
			sl.ResourceVersion = cur.ResourceVersion
			_, err = api.Update(ctx, sl, metav1.UpdateOptions{})
		}
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return 0, fmt.Errorf("probe write: %w", err)
		}
		time.Sleep(time.Second)
	}
	written := time.Now()
	want := ip + ":80"
	for {
		out, _, _ := p.node.Exec("ipvsadm -Ln -t " + p.vip + ":80")
		if strings.Contains(out, want) {
			return time.Since(written), nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return 0, fmt.Errorf("probe endpoint %s not in the node's IPVS table %v after the write", ip, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
