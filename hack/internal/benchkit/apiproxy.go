package benchkit

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// APIProxy stands between one process and a kube-apiserver and counts what the process asks of
// it: requests and the bytes of their responses (watch streams included, as they flow), by verb
// and resource. The process reaches it over plain HTTP on loopback with the kubeconfig Kubeconfig
// writes; the proxy forwards with the identity of the rest.Config it was made with. The audit log
// knows no response sizes, and a watch appears in it only once it ends: bytes read are the cost
// a stateless function pays instead of a cache, so they are counted where they flow.
type APIProxy struct {
	URL      string
	server   *http.Server
	resolver *apirequest.RequestInfoFactory
	mu       sync.Mutex
	counts   map[Call]*callCount
}

// Call is what a request asked: its verb (Kubernetes', e.g. list or watch) and resource
// (with its subresource, e.g. shoots/status).
type Call struct{ Verb, Resource string }

type callCount struct{ requests, bytes atomic.Int64 }

// Counts are requests and response bytes by call.
type Counts map[Call]Count

// Count is one call's requests and response bytes.
type Count struct{ Requests, Bytes int64 }

// StartAPIProxy forwards to the kube-apiserver of cfg as cfg's user.
func StartAPIProxy(cfg *rest.Config) (*APIProxy, error) {
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &APIProxy{
		URL:      "http://" + listener.Addr().String(),
		resolver: &apirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")},
		counts:   map[Call]*callCount{},
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = target.Host
		},
		Transport:     transport,
		FlushInterval: -1, // watch events as they come
		ModifyResponse: func(resp *http.Response) error {
			resp.Body = &countingBody{ReadCloser: resp.Body, count: p.count(resp.Request)}
			return nil
		},
	}
	p.server = &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.server.Serve(listener) }()
	return p, nil
}

// count is the counter of req's call, its request counted.
func (p *APIProxy) count(req *http.Request) *callCount {
	call := Call{Verb: strings.ToLower(req.Method), Resource: req.URL.Path}
	if info, err := p.resolver.NewRequestInfo(req); err == nil && info.IsResourceRequest {
		call = Call{Verb: info.Verb, Resource: info.Resource}
		if info.Subresource != "" {
			call.Resource += "/" + info.Subresource
		}
	}
	p.mu.Lock()
	c, ok := p.counts[call]
	if !ok {
		c = &callCount{}
		p.counts[call] = c
	}
	p.mu.Unlock()
	c.requests.Add(1)
	return c
}

type countingBody struct {
	io.ReadCloser
	count *callCount
}

func (b *countingBody) Read(data []byte) (int, error) {
	n, err := b.ReadCloser.Read(data)
	b.count.bytes.Add(int64(n))
	return n, err
}

// Counts are the requests and bytes so far; subtract two to get a window's.
func (p *APIProxy) Counts() Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	counts := Counts{}
	for call, c := range p.counts {
		counts[call] = Count{Requests: c.requests.Load(), Bytes: c.bytes.Load()}
	}
	return counts
}

// Minus is what c counted beyond earlier.
func (c Counts) Minus(earlier Counts) Counts {
	diff := Counts{}
	for call, n := range c {
		d := Count{Requests: n.Requests - earlier[call].Requests, Bytes: n.Bytes - earlier[call].Bytes}
		if d.Requests != 0 || d.Bytes != 0 {
			diff[call] = d
		}
	}
	return diff
}

// Add adds other into c.
func (c Counts) Add(other Counts) {
	for call, n := range other {
		sum := c[call]
		sum.Requests += n.Requests
		sum.Bytes += n.Bytes
		c[call] = sum
	}
}

// Total is the sum over every call.
func (c Counts) Total() Count {
	var total Count
	for _, n := range c {
		total.Requests += n.Requests
		total.Bytes += n.Bytes
	}
	return total
}

// Calls are c's calls, most bytes first.
func (c Counts) Calls() []Call {
	calls := make([]Call, 0, len(c))
	for call := range c {
		calls = append(calls, call)
	}
	sort.Slice(calls, func(i, j int) bool {
		if c[calls[i]].Bytes != c[calls[j]].Bytes {
			return c[calls[i]].Bytes > c[calls[j]].Bytes
		}
		return fmt.Sprint(calls[i]) < fmt.Sprint(calls[j])
	})
	return calls
}

// Kubeconfig writes a kubeconfig that reaches the kube-apiserver through the proxy to path.
func (p *APIProxy) Kubeconfig(path string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["proxy"] = &clientcmdapi.Cluster{Server: p.URL}
	cfg.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	cfg.CurrentContext = "proxy"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// Close stops the proxy.
func (p *APIProxy) Close() error { return p.server.Close() }

// Bytes formats a number of bytes in the largest binary unit that keeps it above one.
func Bytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	f := float64(n)
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f %s", f, units[i])
}
