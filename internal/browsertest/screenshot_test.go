package browsertest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestScreenshotDir checks where screenshots go: $SCREENSHOT_DIR, else
// .cache/screenshots at the module's root, which git ignores.
func TestScreenshotDir(t *testing.T) {
	t.Setenv("SCREENSHOT_DIR", "")
	dir := ScreenshotDir(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, ".cache", "screenshots"); dir != want {
		t.Errorf("ScreenshotDir() = %s, want %s", dir, want)
	}
	ignore, err := os.ReadFile(filepath.Join(root, ".gitignore"))
	if err != nil || !containsLine(string(ignore), "/.cache/") {
		t.Errorf(".gitignore does not ignore /.cache/ (%v)", err)
	}
	own := t.TempDir()
	t.Setenv("SCREENSHOT_DIR", own)
	if got := ScreenshotDir(t); got != own {
		t.Errorf("with SCREENSHOT_DIR: %s, want %s", got, own)
	}
}

func containsLine(text, line string) bool {
	return slices.Contains(strings.Split(text, "\n"), line)
}
