package sync

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

// LoadObjects reads Services, EndpointSlices and Nodes from multi-document YAML or JSON,
// including v1 Lists, into src. nodeName picks the Node to use; other kinds are ignored.
func LoadObjects(r io.Reader, src *StaticSource, nodeName string) error {
	dec := utilyaml.NewYAMLReader(bufio.NewReader(r))
	decoder := scheme.Codecs.UniversalDeserializer()
	for i := 0; ; i++ {
		doc, err := dec.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
		if err := addObject(obj, src, nodeName); err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
	}
}

func addObject(obj runtime.Object, src *StaticSource, nodeName string) error {
	switch o := obj.(type) {
	case *v1.Service:
		src.SetService(o)
	case *discovery.EndpointSlice:
		if _, ok := src.SetSlice(o); !ok {
			return fmt.Errorf("EndpointSlice %s/%s has no %s label", o.Namespace, o.Name, discovery.LabelServiceName)
		}
	case *v1.Node:
		if o.Name == nodeName {
			src.SetNode(o)
		}
	case *v1.List:
		decoder := scheme.Codecs.UniversalDeserializer()
		for _, item := range o.Items {
			inner, _, err := decoder.Decode(item.Raw, nil, nil)
			if err != nil {
				return err
			}
			if err := addObject(inner, src, nodeName); err != nil {
				return err
			}
		}
	}
	return nil
}
