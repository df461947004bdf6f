package clustersource

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// resource is what a watcher reads of the resource it watches: a LIST, for the place to watch
// from, and watch streams.
type resource interface {
	List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (stream, error)
}

// stream is one watch's events, read by the caller's goroutine: Next blocks for the next one, and
// returns io.EOF once the server has ended the watch.
type stream interface {
	Next() (watch.Event, error)
	Close()
}

// clusterResource reads a resource of a cluster: LISTs with the dynamic client, and watch
// streams over the same connection, decoded in the goroutine that reads them. client-go's watch
// (rest.Request.Watch) decodes each stream in a goroutine of its own (watch.StreamWatcher) for
// a caller that reads a channel; the watcher reads in a loop anyway, so that goroutine and its
// stack are saved, 16 per shoot in a seed's target source.
type clusterResource struct {
	list dynamic.ResourceInterface
	rest rest.Interface
	path string
}

// clusterClients are the clients of one cluster the watchers of its resources share: one
// connection for every LIST and watch.
type clusterClients struct {
	dynamic dynamic.Interface
	rest    rest.Interface
}

func newClusterClients(cfg *rest.Config) (*clusterClients, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	// The dynamic client's configuration (JSON, no group version), for the raw watch requests.
	restClient, err := rest.UnversionedRESTClientForConfigAndClient(dynamic.ConfigFor(cfg), httpClient)
	if err != nil {
		return nil, err
	}
	return &clusterClients{dynamic: dyn, rest: restClient}, nil
}

// resource is gvr in every namespace.
func (c *clusterClients) resource(gvr schema.GroupVersionResource) resource {
	path := "/apis/" + gvr.Group + "/" + gvr.Version + "/" + gvr.Resource
	if gvr.Group == "" {
		path = "/api/" + gvr.Version + "/" + gvr.Resource
	}
	return &clusterResource{list: c.dynamic.Resource(gvr), rest: c.rest, path: path}
}

func (r *clusterResource) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	return r.list.List(ctx, opts)
}

// Watch starts a watch stream with opts; an answer other than 2xx is its API error, as
// client-go's.
func (r *clusterResource) Watch(ctx context.Context, opts metav1.ListOptions) (stream, error) {
	req := r.rest.Get().AbsPath(r.path).Param("watch", "true").Param("resourceVersion", opts.ResourceVersion).
		Param("allowWatchBookmarks", strconv.FormatBool(opts.AllowWatchBookmarks))
	if opts.LabelSelector != "" {
		req = req.Param("labelSelector", opts.LabelSelector)
	}
	if opts.FieldSelector != "" {
		req = req.Param("fieldSelector", opts.FieldSelector)
	}
	if opts.TimeoutSeconds != nil {
		req = req.Param("timeoutSeconds", strconv.FormatInt(*opts.TimeoutSeconds, 10))
	}
	body, err := req.Stream(ctx)
	if err != nil {
		return nil, err
	}
	return newJSONStream(body), nil
}

// jsonStream decodes a watch stream in the JSON the dynamic client's configuration asks for: one
// metav1.WatchEvent after the other.
type jsonStream struct {
	body    io.ReadCloser
	decoder *json.Decoder
}

func newJSONStream(body io.ReadCloser) *jsonStream {
	return &jsonStream{body: body, decoder: json.NewDecoder(body)}
}

func (s *jsonStream) Next() (watch.Event, error) {
	var e metav1.WatchEvent
	if err := s.decoder.Decode(&e); err != nil {
		if errors.Is(err, io.EOF) {
			return watch.Event{}, io.EOF
		}
		return watch.Event{}, err
	}
	var obj runtime.Object
	if watch.EventType(e.Type) == watch.Error {
		status := &metav1.Status{}
		if err := json.Unmarshal(e.Object.Raw, status); err != nil {
			return watch.Event{}, err
		}
		obj = status
	} else {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(e.Object.Raw); err != nil {
			return watch.Event{}, err
		}
		obj = u
	}
	return watch.Event{Type: watch.EventType(e.Type), Object: obj}, nil
}

func (s *jsonStream) Close() { _ = s.body.Close() }
