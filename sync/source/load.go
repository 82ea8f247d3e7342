package source

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	networking "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/ipvs-proxier/ipvs-proxier/proxier"
	"github.com/ipvs-proxier/ipvs-proxier/sync/kubeapi"
)

// LoadObjects reads Services, EndpointSlices and Nodes into src from what kubectl
// accepts: multi-document YAML (comment-only and null documents, as `helm template`
// prints, are skipped), JSON (one object, newline-delimited or concatenated), `kind:
// List` and the typed lists (`ServiceList`, `EndpointSliceList`, `NodeList`), in UTF-8
// or in UTF-16 with a byte-order mark. nodeName picks the Node to use. What cannot be
// used is skipped, with a note for each: objects of kinds the scheme does not know
// (custom resources), other kinds, EndpointSlices without the service-name label and
// headless ones (the daemon does not watch either). Unreadable input is an error: a YAML
// mapping with a key twice (the apiserver refuses it), NUL bytes, an input over
// MaxInputBytes (ErrInputTooLarge).
func LoadObjects(r io.Reader, src *StaticSource, nodeName string) (notes []string, err error) {
	return loadObjects(r, src, nodeName, MaxInputBytes)
}

// loadObjects is LoadObjects reading at most limit bytes of r.
func loadObjects(r io.Reader, src *StaticSource, nodeName string, limit int64) (notes []string, err error) {
	l := &loader{src: src, node: nodeName}
	stream, _, isJSON := utilyaml.GuessJSONStream(textReader(&inputLimit{r: r, max: limit}), 4096)
	var next func() ([]byte, error)
	if isJSON {
		dec := json.NewDecoder(stream)
		next = func() ([]byte, error) {
			var raw json.RawMessage
			err := dec.Decode(&raw)
			return raw, err
		}
	} else {
		yr := utilyaml.NewYAMLReader(bufio.NewReader(stream))
		next = func() ([]byte, error) {
			doc, err := yr.Read()
			if err != nil {
				return nil, err
			}
			return yaml.YAMLToJSONStrict(doc)
		}
	}
	for i := 0; ; i++ {
		raw, err := next()
		if errors.Is(err, io.EOF) {
			return l.notes, nil
		} else if err != nil {
			return l.notes, fmt.Errorf("document %d: %w", i, err)
		}
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		if err := l.decode(raw, fmt.Sprintf("document %d", i)); err != nil {
			return l.notes, err
		}
	}
}

type loader struct {
	src   *StaticSource
	node  string
	notes []string
}

func (l *loader) note(format string, args ...any) {
	l.notes = append(l.notes, fmt.Sprintf(format, args...))
}

func (l *loader) decode(raw []byte, where string) error {
	obj, gvk, err := kubeapi.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
	switch {
	case runtime.IsNotRegisteredError(err):
		kind := "unknown"
		if gvk != nil {
			kind = gvk.String()
		}
		l.note("%s: kind %s is not a Service, EndpointSlice, Node or ServiceCIDR; skipped", where, kind)
		return nil
	case err != nil:
		return fmt.Errorf("%s: %w", where, err)
	}
	l.add(obj, where)
	return nil
}

func (l *loader) add(obj runtime.Object, where string) {
	switch o := obj.(type) {
	case *v1.Service:
		l.src.SetService(o)
	case *discovery.EndpointSlice:
		if _, headless := o.Labels[proxier.LabelHeadless]; headless {
			l.note("%s: EndpointSlice %s/%s is labelled %s; skipped, as the daemon does not watch it", where, o.Namespace, o.Name, proxier.LabelHeadless)
			return
		}
		if _, ok := l.src.SetSlice(o); !ok {
			l.note("%s: EndpointSlice %s/%s has no %s label; skipped", where, o.Namespace, o.Name, discovery.LabelServiceName)
		}
	case *v1.Node:
		if o.Name == l.node {
			l.src.SetNode(o)
		}
	case *v1.List:
		for i, item := range o.Items {
			if err := l.decode(item.Raw, fmt.Sprintf("%s item %d", where, i)); err != nil {
				l.note("%v; skipped", err)
			}
		}
	case *v1.ServiceList:
		for i := range o.Items {
			l.add(&o.Items[i], where)
		}
	case *discovery.EndpointSliceList:
		for i := range o.Items {
			l.add(&o.Items[i], where)
		}
	case *v1.NodeList:
		for i := range o.Items {
			l.add(&o.Items[i], where)
		}
	case *networking.ServiceCIDR:
		l.src.AddServiceCIDRs(o)
	case *networking.ServiceCIDRList:
		for i := range o.Items {
			l.add(&o.Items[i], where)
		}
	default:
		l.note("%s: kind %T is not a Service, EndpointSlice, Node or ServiceCIDR; skipped", where, obj)
	}
}
