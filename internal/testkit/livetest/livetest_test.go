package livetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestPoll(t *testing.T) {
	t.Run("holds after some checks", func(t *testing.T) {
		checks, pumps := 0, 0
		err := Poll(context.Background(), Wait, func() int { pumps++; return 0 }, func() (bool, string) {
			checks++
			return checks == 5, fmt.Sprintf("check %d", checks)
		})
		if err != nil || checks != 5 || pumps != 5 {
			t.Fatalf("err %v after %d checks and %d pumps, want nil after 5 and 5", err, checks, pumps)
		}
	})
	t.Run("deadline reports the last reason", func(t *testing.T) {
		checks := 0
		start := time.Now()
		err := Poll(context.Background(), 200*time.Millisecond, nil, func() (bool, string) {
			checks++
			return false, fmt.Sprintf("%d peers", checks)
		})
		var te *TimeoutError
		if !errors.As(err, &te) || te.Why != fmt.Sprintf("%d peers", checks) || te.Within != 200*time.Millisecond {
			t.Fatalf("err %v after %d checks, want a timeout naming the last reason", err, checks)
		}
		if el := time.Since(start); el < 200*time.Millisecond {
			t.Fatalf("gave up after %v, before its 200 ms", el)
		}
		if checks < 2 {
			t.Fatalf("%d checks in 200 ms: the condition was not re-checked", checks)
		}
	})
	t.Run("empty reason still says something", func(t *testing.T) {
		err := Poll(context.Background(), time.Millisecond, nil, func() (bool, string) { return false, "" })
		if err == nil || !strings.Contains(err.Error(), "did not hold") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("context ends the wait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		checks := 0
		err := Poll(ctx, Wait, nil, func() (bool, string) {
			checks++
			if checks == 3 {
				cancel()
			}
			return false, "never"
		})
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "never") {
			t.Fatalf("err %v, want the cancellation with the last reason", err)
		}
	})
}

func TestEventually(t *testing.T) {
	r := &Recorder{TB: t}
	Eventually(r, 20*time.Millisecond, Holds("the moon", func() bool { return false }))
	if len(r.Failures) != 1 || !strings.Contains(r.Failures[0], "not yet: the moon") || !strings.Contains(r.Failures[0], "20ms") {
		t.Fatalf("failures %q, want one naming the condition and the deadline", r.Failures)
	}
	r = &Recorder{TB: t}
	n := 0
	EventuallyPumping(r, Wait, func() int { n++; return 0 }, Holds("three pumps", func() bool { return n >= 3 }))
	if len(r.Failures) != 0 || n != 3 {
		t.Fatalf("failures %q after %d pumps", r.Failures, n)
	}
}

func TestClosed(t *testing.T) {
	ch := make(chan struct{})
	if ok, why := Closed("the reaper", ch)(); ok || why != "not yet: the reaper" {
		t.Fatalf("open channel: %v %q", ok, why)
	}
	close(ch)
	if ok, _ := Closed("the reaper", ch)(); !ok {
		t.Fatal("closed channel does not hold")
	}
}

func TestGo(t *testing.T) {
	t.Run("cleanup cancels and waits", func(t *testing.T) {
		r := &Recorder{TB: t}
		ended := false
		k := Go(r, "server", func(ctx context.Context) error {
			<-ctx.Done()
			ended = true
			return ctx.Err()
		})
		r.End()
		<-k.Done()
		if !ended || len(r.Failures) != 0 {
			t.Fatalf("ended %v, failures %q: a cancelled task stops cleanly", ended, r.Failures)
		}
	})
	t.Run("an error fails the test", func(t *testing.T) {
		r := &Recorder{TB: t}
		Go(r, "server", func(ctx context.Context) error { return errors.New("bind: address in use") })
		r.End()
		if len(r.Failures) != 1 || !strings.Contains(r.Failures[0], "server: bind: address in use") {
			t.Fatalf("failures %q", r.Failures)
		}
	})
	t.Run("Stop returns the error and the cleanup stays quiet", func(t *testing.T) {
		r := &Recorder{TB: t}
		k := Go(r, "server", func(ctx context.Context) error { <-ctx.Done(); return errors.New("unclean") })
		if err := k.Stop(); err == nil || !strings.Contains(err.Error(), "unclean") {
			t.Fatalf("Stop: %v", err)
		}
		if err := k.Stop(); err == nil {
			t.Fatal("a second Stop lost the result")
		}
		r.End()
		if len(r.Failures) != 0 {
			t.Fatalf("failures %q: Stop's result was the test's to judge", r.Failures)
		}
	})
	t.Run("a task that ignores its context is reported", func(t *testing.T) {
		r := &Recorder{TB: t}
		release := make(chan struct{})
		k := Go(r, "stuck", func(context.Context) error { <-release; return nil })
		k.stopWithin = 20 * time.Millisecond
		r.End()
		close(release)
		<-k.Done()
		if len(r.Failures) != 1 || !strings.Contains(r.Failures[0], "stuck did not stop within 20ms") {
			t.Fatalf("failures %q", r.Failures)
		}
	})
}

func TestWithin(t *testing.T) {
	r := &Recorder{TB: t}
	if v := Within(r, Wait, "answer", func() int { return 42 }); v != 42 || len(r.Failures) != 0 {
		t.Fatalf("got %d, failures %q", v, r.Failures)
	}
	release := make(chan struct{})
	defer close(release)
	if v := Within(r, 20*time.Millisecond, "Close", func() int { <-release; return 1 }); v != 0 {
		t.Fatalf("a hung call returned %d", v)
	}
	if len(r.Failures) != 1 || r.Failures[0] != "Close did not return within 20ms" {
		t.Fatalf("failures %q", r.Failures)
	}
}
