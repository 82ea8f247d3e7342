package source

import (
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/ipvs-proxier/ipvs-proxier/sync/kubeapi/kubeapitest"
)

// TestServiceCIDRsAbsent: an apiserver that does not serve ServiceCIDRs answers their
// list with 404; OnServiceCIDRsAbsent's function hears it once however often the
// informer retries, the other informers sync, and ServiceCIDRs stays nil (the flag's
// ranges are used).
func TestServiceCIDRsAbsent(t *testing.T) {
	client := fake.NewClientset()
	var lists atomic.Int32
	client.PrependReactor("list", "servicecidrs", func(clienttesting.Action) (bool, runtime.Object, error) {
		lists.Add(1)
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "networking.k8s.io", Resource: "servicecidrs"}, "")
	})
	src := NewInformerSource(kubeapitest.Clientset{Interface: client}, "node-1", 0, NewTracker(func() {}), nil)
	var told atomic.Int32
	src.OnServiceCIDRsAbsent(func(error) { told.Add(1) })
	stop := make(chan struct{})
	defer close(stop)
	src.Start(stop)
	deadline := time.Now().Add(30 * time.Second)
	for (!src.HasSynced() || lists.Load() < 2) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !src.HasSynced() {
		t.Fatal("the other informers did not sync")
	}
	if lists.Load() < 2 {
		t.Fatalf("the ServiceCIDR list was tried %d times; want the informer to retry", lists.Load())
	}
	if n := told.Load(); n != 1 {
		t.Errorf("OnServiceCIDRsAbsent's function called %d times, want once", n)
	}
	if got := src.ServiceCIDRs(); got != nil {
		t.Errorf("ServiceCIDRs %v, want nil", got)
	}
}
