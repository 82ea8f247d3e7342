package source

import (
	"net/http"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ipvs-proxier/ipvs-proxier/sync/kubeapi/kubeapitest"
	clienttesting "k8s.io/client-go/testing"
)

// TestWatchStreamErrorsAreReported: an open watch stream that ends in an error (what a
// silent partition gives: "http2: client connection lost") reaches OnWatchError's
// function; client-go's reflector would only log it and start over. An expired resource
// version on the stream is routine and is not reported.
func TestWatchStreamErrorsAreReported(t *testing.T) {
	client := fake.NewClientset()
	watchers := make(chan *watch.FakeWatcher, 16)
	client.PrependWatchReactor("services", func(clienttesting.Action) (bool, watch.Interface, error) {
		w := watch.NewFakeWithChanSize(4, false)
		watchers <- w
		return true, w, nil
	})
	src := NewInformerSource(kubeapitest.Clientset{Interface: client}, "node-1", 0, NewTracker(func() {}), nil)
	got := make(chan error, 16)
	src.OnWatchError(func(err error) { got <- err })
	stop := make(chan struct{})
	defer close(stop)
	src.Start(stop)
	next := func() *watch.FakeWatcher {
		select {
		case w := <-watchers:
			return w
		case <-time.After(30 * time.Second):
			t.Fatal("the informer opened no watch")
			return nil
		}
	}
	expired := apierrors.NewResourceExpired("too old resource version").Status()
	w := next()
	w.Error(&expired)
	w = next() // the reflector relists and watches again
	lost := metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError,
		Message: "unable to decode an event from the watch stream: http2: client connection lost"}
	w.Error(&lost)
	select {
	case err := <-got:
		if !apierrors.IsInternalError(err) {
			t.Errorf("reported %v, want the stream's internal error", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a watch stream that ended in an error was not reported")
	}
	select {
	case err := <-got:
		t.Errorf("reported more than the one stream error: %v", err)
	default:
	}
}
