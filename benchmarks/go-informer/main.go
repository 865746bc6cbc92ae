// go-informer is the client-go peer of informer-bench: a SharedInformerFactory over
// every Pod of the server named by -kubeconfig, with an update handler, once with
// client-go's defaults and once (-strip) with a transform that drops managedFields as
// kube-controller-manager's informers do.
//
// It speaks bench-client's line protocol: prints "SYNCED <secs>" once the informer has
// synced; then waits for "go <m>" on stdin, prints "WAITING", counts m update events and
// prints "RESULT <synced secs> <events/s> <peak RSS bytes> <CPU secs>". Then the relist,
// as bench-client does it: on "relist" it notes its RSS, resets its peak and prints
// "RELIST-READY"; on "wait <namespace/name> <rv>" it waits until its store holds that
// object at that resourceVersion or newer, one more second, and prints
// "RELISTED <steady RSS> <peak RSS> <CPU secs of the relist>". Client-side rate limiting is off
// (kube-runtime has none; client-go's default of 5 requests/s would dominate a paged
// list of 100k objects).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// statusBytes is a field of /proc/self/status (VmHWM, VmRSS), in bytes.
func statusBytes(field string) uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kib, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kib * 1024
		}
	}
	return 0
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "go-informer: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "the server's kubeconfig")
	strip := flag.Bool("strip", false, "drop managedFields with a transform")
	flag.Parse()

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fail("kubeconfig: %v", err)
	}
	config.QPS = -1
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil {
		fail("clientset: %v", err)
	}

	var opts []informers.SharedInformerOption
	if *strip {
		opts = append(opts, informers.WithTransform(func(obj any) (any, error) {
			if acc, ok := obj.(*corev1.Pod); ok {
				acc.ManagedFields = nil
			}
			return obj, nil
		}))
	}
	start := time.Now()
	factory := informers.NewSharedInformerFactoryWithOptions(clientset, 0, opts...)
	informer := factory.Core().V1().Pods().Informer()

	var seen, target atomic.Int64
	done := make(chan struct{})
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) {},
		UpdateFunc: func(_, _ any) {
			n := seen.Add(1)
			if t := target.Load(); t > 0 && n == t {
				close(done)
			}
		},
	}); err != nil {
		fail("handler: %v", err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	for !informer.HasSynced() {
		time.Sleep(time.Millisecond)
	}
	synced := time.Since(start).Seconds()
	fmt.Printf("SYNCED %v\n", synced)
	fmt.Fprintf(os.Stderr, "go-informer: %d objects in the store at synced\n", len(informer.GetStore().ListKeys()))

	lines := bufio.NewScanner(os.Stdin)
	var m int64
	for lines.Scan() {
		if rest, ok := strings.CutPrefix(lines.Text(), "go "); ok {
			m, err = strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
			if err != nil {
				fail("bad go line: %v", err)
			}
			break
		}
	}
	if m == 0 {
		fail("stdin closed before go")
	}
	target.Store(m)
	t0 := time.Now()
	fmt.Println("WAITING")
	if seen.Load() < m {
		<-done
	}
	secs := time.Since(t0).Seconds()
	fmt.Printf("RESULT %v %v %v %v\n", synced, float64(m)/secs, statusBytes("VmHWM:"), cpuSeconds())

	var steady uint64
	var cpu0 float64
	for lines.Scan() {
		words := strings.Fields(lines.Text())
		switch {
		case len(words) == 1 && words[0] == "relist":
			steady = statusBytes("VmRSS:")
			if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
				fail("resetting the peak RSS: %v", err)
			}
			cpu0 = cpuSeconds()
			fmt.Println("RELIST-READY")
		case len(words) == 3 && words[0] == "wait":
			want, err := strconv.ParseUint(words[2], 10, 64)
			if err != nil {
				fail("bad wait line: %v", err)
			}
			for {
				obj, ok, _ := informer.GetStore().GetByKey(words[1])
				if pod, isPod := obj.(*corev1.Pod); ok && isPod {
					if rv, err := strconv.ParseUint(pod.ResourceVersion, 10, 64); err == nil && rv >= want {
						break
					}
				}
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(time.Second)
			fmt.Printf("RELISTED %v %v %v\n", steady, statusBytes("VmHWM:"), cpuSeconds()-cpu0)
		default:
			close(stop)
			os.Exit(0)
		}
	}
	close(stop)
	os.Exit(0)
}
