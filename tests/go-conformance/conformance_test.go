// Package conformance runs client-go against kubegen-apiserver and asserts what
// client-go expects of a kube-apiserver: typed clientset verbs and their error types,
// shared informers over a built-in kind and a custom resource (with the WatchListClient
// feature on and off: hack/go-conformance.sh runs the package once each way), the
// dynamic client, server-side apply, and a leader-election pair over a Lease.
//
// The server's address comes from KUBECONFIG; the CRD gizmos.example.com/v1 (testdata/)
// must have been loaded with -f. Every test works in its own namespace.
package conformance

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

var (
	config *rest.Config
	// cs keeps client-go's default content negotiation: built-in kinds travel as protobuf.
	cs      *kubernetes.Clientset
	dyn     *dynamic.DynamicClient
	gizmos  = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gizmos"}
	journal requestLog
)

// requestLog records every request's method, URL and body media type, so tests can
// assert how client-go talked to the server (a watch-list stream or a LIST, protobuf).
type requestLog struct {
	mu   sync.Mutex
	reqs []string
}

func (l *requestLog) add(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, r.Method+" "+r.URL.String()+" "+r.Header.Get("Content-Type"))
}

// matching returns the recorded requests containing every one of parts.
func (l *requestLog) matching(parts ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
next:
	for _, r := range l.reqs {
		for _, p := range parts {
			if !strings.Contains(r, p) {
				continue next
			}
		}
		out = append(out, r)
	}
	return out
}

type recorder struct{ next http.RoundTripper }

func (r recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	journal.add(req)
	return r.next.RoundTrip(req)
}

func TestMain(m *testing.M) {
	path := os.Getenv("KUBECONFIG")
	if path == "" {
		fmt.Fprintln(os.Stderr, "KUBECONFIG is not set: run hack/go-conformance.sh")
		os.Exit(2)
	}
	var err error
	config, err = clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubeconfig %s: %v\n", path, err)
		os.Exit(2)
	}
	config.QPS = 1000
	config.Burst = 1000
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper { return recorder{rt} })
	// Typed clients keep client-go's defaults, as a controller's do: they send built-in
	// kinds as protobuf (TestProtobufBodies checks that they really do).
	cs = kubernetes.NewForConfigOrDie(config)
	dyn = dynamic.NewForConfigOrDie(config)
	os.Exit(m.Run())
}

// ctxFor is a context that ends with the test, with a deadline so that a server that
// stops answering fails the test instead of hanging CI.
func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// namespace creates a namespace for the test (the server, like a cluster, rejects
// writes into a missing one) and deletes it afterwards.
func namespace(t *testing.T, ctx context.Context) string {
	t.Helper()
	name := "gc-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 63 {
		name = name[:63]
	}
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// eventually polls cond every 20 ms until it holds or 20 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func mustStatus(t *testing.T, what string, err error, is func(error) bool, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: succeeded, want %s", what, want)
	}
	if !is(err) {
		t.Fatalf("%s: got %v (reason %q, code %d), want %s", what, err, apierrors.ReasonForError(err), codeOf(err), want)
	}
}

func codeOf(err error) int32 {
	if s, ok := err.(apierrors.APIStatus); ok {
		return s.Status().Code
	}
	return 0
}
