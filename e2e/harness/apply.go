package harness

import (
	"context"
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ApplyFile creates the Services and EndpointSlices of a YAML file.
func (cp *ControlPlane) ApplyFile(ctx context.Context, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	objs, err := decodeAll(path, data)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		switch o := obj.(type) {
		case *v1.Service:
			_, err = cp.Admin.CoreV1().Services(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *discovery.EndpointSlice:
			_, err = cp.Admin.DiscoveryV1().EndpointSlices(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		default:
			err = fmt.Errorf("%s: unsupported object %T", path, obj)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
