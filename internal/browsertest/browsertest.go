package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromiumPath finds Debian's chromium, or fails the test.
func chromiumPath(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("the browser tests need Debian's chromium: %v; run make testdeps (it installs it with apt)", err)
	}
	return path
}

// New starts a headless chromium in a fresh profile and returns the context
// of its tab, and a function that returns the problems the page reported so
// far. The browser is killed, and its goroutines waited for, when the test
// ends.
//
// Under -short (make test-unit) it skips the test: the unit layer runs no
// browser. Outside -short a missing chromium fails the test.
func New(t testing.TB) (context.Context, func() []string) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs headless chromium: not in the unit layer (-short); make test runs it")
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-quic", true),
	)
	// The page's uncaught exceptions and console errors fail the test;
	// the listener runs on chromedp's goroutines, so it only collects.
	var mu sync.Mutex
	var problems []string
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithListener(func(ev any) {
		var problem string
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			problem = "exception: " + ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				problem += " " + ev.ExceptionDetails.Exception.Description
			}
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
				var args []string
				for _, a := range ev.Args {
					if len(a.Value) > 0 {
						args = append(args, string(a.Value))
					} else {
						args = append(args, a.Description)
					}
				}
				problem = fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " "))
			}
		}
		if problem != "" {
			mu.Lock()
			problems = append(problems, problem)
			mu.Unlock()
		}
	}))
	t.Cleanup(func() {
		cancel()
		cancelAlloc() // waits for the browser process to exit
	})
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), problems...)
	}
}

// Viewport sets the tab's viewport to width×height CSS pixels; mobile
// emulates a phone (touch, the page's meta viewport honoured).
func Viewport(t testing.TB, ctx context.Context, width, height int64, mobile bool) {
	t.Helper()
	opts := []chromedp.EmulateViewportOption{chromedp.EmulateLandscape}
	if mobile {
		opts = []chromedp.EmulateViewportOption{chromedp.EmulatePortrait, chromedp.EmulateMobile, chromedp.EmulateTouch}
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, height, opts...)); err != nil {
		t.Fatalf("set the viewport to %dx%d: %v", width, height, err)
	}
}

// Screenshot saves a PNG of the tab's viewport to path.
func Screenshot(t testing.TB, ctx context.Context, path string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatalf("screenshot: %v", err)
	}
}

// ScreenshotDir is where tests save their screenshots, for a person to
// look at after the run: $SCREENSHOT_DIR when set, else .cache/screenshots
// at the module's root (git ignores .cache), else, outside a module, a
// temporary directory of the test.
func ScreenshotDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("SCREENSHOT_DIR")
	if dir == "" {
		root, err := moduleRoot()
		if err != nil {
			return t.TempDir()
		}
		dir = filepath.Join(root, ".cache", "screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("screenshot directory: %v", err)
	}
	return dir
}

// moduleRoot is the closest directory above the working directory (a
// test's: its package's) that holds a go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}
