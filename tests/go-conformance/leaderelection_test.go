package conformance

import (
	"context"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Two client-go leader electors on one Lease: exactly one leads; when it stops (and
// releases), the other takes over; the Lease names the holder each time.
func TestLeaderElectionPair(t *testing.T) {
	ctx := ctxFor(t)
	ns := namespace(t, ctx)

	var mu sync.Mutex
	leading := map[string]bool{}
	everLed := map[string]bool{}
	elector := func(id string) (*leaderelection.LeaderElector, error) {
		lock, err := resourcelock.New(resourcelock.LeasesResourceLock, ns, "pair",
			cs.CoreV1(), cs.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
		if err != nil {
			return nil, err
		}
		return leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   3 * time.Second,
			RenewDeadline:   2 * time.Second,
			RetryPeriod:     200 * time.Millisecond,
			ReleaseOnCancel: true,
			Name:            "pair",
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) {
					mu.Lock()
					defer mu.Unlock()
					leading[id] = true
					everLed[id] = true
				},
				OnStoppedLeading: func() {
					mu.Lock()
					defer mu.Unlock()
					leading[id] = false
				},
			},
		})
	}
	leaders := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for id, on := range leading {
			if on {
				out = append(out, id)
			}
		}
		return out
	}

	a, err := elector("a")
	if err != nil {
		t.Fatalf("elector a: %v", err)
	}
	b, err := elector("b")
	if err != nil {
		t.Fatalf("elector b: %v", err)
	}
	ctxA, stopA := context.WithCancel(ctx)
	ctxB, stopB := context.WithCancel(ctx)
	doneA := make(chan struct{})
	doneB := make(chan struct{})
	go func() { a.Run(ctxA); close(doneA) }()
	// IsLeader turns true when the lease is acquired; client-go runs OnStartedLeading
	// in a goroutine of its own a moment later, so wait for both.
	isOnly := func(id string) bool { l := leaders(); return len(l) == 1 && l[0] == id }
	eventually(t, "a to lead", func() bool { return a.IsLeader() && isOnly("a") })
	go func() { b.Run(ctxB); close(doneB) }()
	defer func() { stopB(); <-doneB }()

	// b keeps trying for more than a lease duration without taking over.
	deadline := time.Now().Add(4 * time.Second)
	for time.Now().Before(deadline) {
		if l := leaders(); len(l) != 1 || l[0] != "a" {
			t.Fatalf("while a renews, leaders = %v", l)
		}
		time.Sleep(100 * time.Millisecond)
	}
	lease, err := cs.CoordinationV1().Leases(ns).Get(ctx, "pair", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "a" {
		t.Fatalf("lease while a leads: %v %+v", err, lease.Spec)
	}
	if lease.Spec.LeaseTransitions == nil {
		t.Fatalf("the lease has no leaseTransitions")
	}
	transitions := *lease.Spec.LeaseTransitions

	stopA()
	<-doneA
	eventually(t, "b to take over after a released the lease", func() bool { return b.IsLeader() })
	eventually(t, "b's OnStartedLeading, and a's OnStoppedLeading", func() bool { return isOnly("b") })
	lease, err = cs.CoordinationV1().Leases(ns).Get(ctx, "pair", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "b" {
		t.Fatalf("lease after the takeover: %v %+v", err, lease.Spec)
	}
	if lease.Spec.LeaseTransitions == nil || *lease.Spec.LeaseTransitions <= transitions {
		t.Fatalf("leaseTransitions did not grow on the takeover: %v -> %v", transitions, lease.Spec.LeaseTransitions)
	}
	if !everLed["a"] {
		t.Fatalf("a never led")
	}
}
