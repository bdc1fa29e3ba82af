package server_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/guard/boundedfile/boundedfiletest"
	"github.com/scalegate/scalegate/internal/reference/admin"
	"github.com/scalegate/scalegate/internal/reference/server"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
	"github.com/scalegate/scalegate/internal/testkit/livetest/liveserver"
)

// TestLoadConfigRefusesHostileFiles is the acceptance test of the config
// reader: a /dev/zero symlink, a FIFO and a 300 MB file as --config are
// each refused within 2 s with less than 64 MB of growth.
func TestLoadConfigRefusesHostileFiles(t *testing.T) {
	boundedfiletest.Refuses(t, boundedfiletest.Files(t, t.TempDir(), "server.toml"), func(p string) error {
		_, err := server.LoadConfig(p)
		return err
	})
}

// startReloadable starts a live server whose admin reload re-reads path.
func startReloadable(t *testing.T, path string, reload server.Reloader) (*liveserver.Server, string) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "admin.sock")
	ls := liveserver.StartPrepared(t, func(c *server.Config) { c.Admin.Socket = sock },
		func(s *server.Server) { s.SetReload(path, reload) })
	return ls, sock
}

// TestReloadOfAFIFOConfig: the config replaced by a FIFO nobody writes.
// Every reload is answered with an error naming it (before, each one
// blocked a connection slot forever and 8 of them wedged the socket), the
// socket keeps answering, and the server still stops when told.
func TestReloadOfAFIFOConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.toml")
	if err := os.WriteFile(path, []byte("[world]\noverrun_governor = true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ls, sock := startReloadable(t, path, func(ctx context.Context) (server.Config, error) { return server.LoadConfigContext(ctx, path) })
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), livetest.Wait)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for range 12 { // more than the 8 connections answered at once
		wg.Go(func() {
			_, err := admin.Do(ctx, sock, "reload")
			var ans *admin.AnsweredError
			if !errors.As(err, &ans) || !strings.Contains(ans.Msg, "is a named pipe (FIFO), not a regular file") || !strings.Contains(ans.Msg, "nothing changed") {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("reload of a FIFO config: %v, want an error line naming the FIFO", err)
	}
	if lines, err := admin.Do(ctx, sock, "status"); err != nil || !strings.HasPrefix(lines[0], "peers 0") {
		t.Fatalf("status after the reloads: %q %v", lines, err)
	}
	ls.Stop(t)
}

// TestShutdownDoesNotWaitForABlockedReload: a reload whose read blocks
// (a config on a hung file system) is abandoned when the server stops: the
// admin socket's Close, and so shutdown, never waits on it.
func TestShutdownDoesNotWaitForABlockedReload(t *testing.T) {
	entered := make(chan struct{})
	var once sync.Once
	ls, sock := startReloadable(t, "server.toml", func(ctx context.Context) (server.Config, error) {
		once.Do(func() { close(entered) })
		<-ctx.Done()
		return server.Config{}, ctx.Err()
	})
	answered := make(chan error, 1)
	go func() {
		_, err := admin.Do(context.Background(), sock, "reload")
		answered <- err
	}()
	select {
	case <-entered:
	case <-time.After(livetest.Wait):
		t.Fatal("the reload never started")
	}
	stopped := make(chan struct{})
	go func() { ls.Shutdown(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(livetest.Wait):
		t.Fatal("shutdown waited for the blocked reload")
	}
	if err := <-answered; err == nil {
		t.Error("the abandoned reload answered success")
	}
}
