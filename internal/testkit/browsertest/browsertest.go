// Package browsertest opens a page in headless Chromium and reports what went wrong.
//
// A page that is valid HTML to a parser can still draw its charts at zero
// size or hide its verdict; a test that opens it the way people read it
// cannot be fooled so. Open collects every console error, exception, log
// error and fetch while the page loads, evaluates a layout probe and takes
// a full-page screenshot. It does not skip without Chromium: the test
// command (scripts/test.sh) installs it.
package browsertest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromiumPath finds the browser: $CHROMIUM, else Debian's chromium.
func chromiumPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium on PATH (looked for chromium, chromium-browser): run scripts/test.sh, or " +
		"SCALEGATE_NEED_CHROMIUM=1 bash scripts/deps.sh, which install Debian's chromium with apt-get; " +
		"or set CHROMIUM=/path/to/chrome")
	return ""
}

// New starts one headless Chromium for the test (root-safe flags, a fresh
// profile, no background traffic) and returns a tab context; it stops
// when the test ends.
func New(t testing.TB) context.Context {
	t.Helper()
	// Chromium leaves its singleton socket and, with disable-dev-shm-usage,
	// its shared memory in $TMPDIR (directories org.chromium.Chromium.*):
	// five a browser, never removed. They go in a directory of the test's
	// own, kept short for the socket's path limit (108 bytes).
	tmp, err := os.MkdirTemp("", "sgchrome")
	if err != nil {
		t.Fatal(err)
	}
	parent, cancelTimeout := context.WithTimeout(context.Background(), 3*time.Minute)
	alloc, cancelAlloc := chromedp.NewExecAllocator(parent,
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
		chromedp.Env("TMPDIR="+tmp),
	)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc() // waits for the browser to exit
		cancelTimeout()
		if err := os.RemoveAll(tmp); err != nil {
			t.Errorf("browser temp dir: %v", err)
		}
	})
	return ctx
}

// Page is what the browser saw of a page.
type Page struct {
	// Problems are console errors, exceptions, log errors and fetches of
	// anything but file: and data: URLs (the page must be self-contained).
	Problems []string
	// PNG is a full-page screenshot.
	PNG []byte
}

// Open opens path in a new tab of browser, collects every problem the
// browser reports while loading it, evaluates probe (a JavaScript
// expression) into result and takes a full-page screenshot.
func Open[T any](t testing.TB, browser context.Context, path, probe string) (Page, T) {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	defer cancel()
	var mu sync.Mutex
	var pc Page
	add := func(format string, args ...any) {
		mu.Lock()
		pc.Problems = append(pc.Problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	err := chromedp.Listen(ctx, func(ev any) { problem(ev, add) })
	if err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	u := (&url.URL{Scheme: "file", Path: abs}).String()
	if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
		t.Fatalf("open %s: %v", u, err)
	}
	probed, err := chromedp.Run(ctx, chromedp.Evaluate[T](probe))
	if err != nil {
		t.Fatalf("measure %s: %v", u, err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", u, err)
	}
	mu.Lock()
	defer mu.Unlock()
	pc.PNG = png
	return pc, probed
}

// problem reports ev through add when it is something a self-contained,
// working page never does: a console error, an exception, a logged
// error, a fetch of anything but file: or data:.
func problem(ev any, add func(format string, args ...any)) {
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
			add("console.%s: %s", e.Type, consoleArgs(e.Args))
		}
	case *runtime.EventExceptionThrown:
		add("exception: %s", (&chromedp.ExceptionError{ExceptionDetails: e.ExceptionDetails}).Error())
	case *log.EventEntryAdded:
		if e.Entry.Level == log.EntryLevelError {
			add("log error (%s): %s %s", e.Entry.Source, e.Entry.Text, e.Entry.URL)
		}
	case *network.EventRequestWillBeSent:
		if u := e.Request.URL; !strings.HasPrefix(u, "file:") && !strings.HasPrefix(u, "data:") {
			add("fetched %s (the page must be self-contained)", u)
		}
	}
}

func consoleArgs(args []*runtime.RemoteObject) string {
	var parts []string
	for _, a := range args {
		parts = append(parts, strings.Trim(string(a.Value), `"`)+a.Description)
	}
	return strings.Join(parts, " ")
}
