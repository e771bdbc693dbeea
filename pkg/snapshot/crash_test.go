package snapshot

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fill applies n batches to a new store in dir and returns what Load gave
// after each (want[0] is the empty store's). flush writes the data to
// table files before the store is closed.
func fill(t *testing.T, dir string, n int, flush bool) []snap {
	t.Helper()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := []snap{load(t, s)}
	for i := range n {
		c := fmt.Sprintf("cluster-%d", i%3)
		b := Batch{Revision: uint64(i + 1), Epoch: "e", Streams: []StreamMeta{meta(c, "pods", uint64(100+i))}}
		for j := range 20 {
			b.Put = append(b.Put, obj(c, "pods", "ns", fmt.Sprintf("pod-%d-%d", i, j), i))
		}
		if i > 0 {
			gone := obj(c, "pods", "ns", fmt.Sprintf("pod-%d-0", i-1), i-1)
			b.Delete = append(b.Delete, gone.ObjectKey)
			b.Tombs = append(b.Tombs, tomb(gone, uint64(100+i), 0))
		}
		if err := s.Apply(b); err != nil {
			t.Fatal(err)
		}
		want = append(want, load(t, s))
	}
	if flush {
		if err := s.flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return want
}

// files returns the store's files whose names match pattern, largest
// last.
func files(t *testing.T, dir, pattern string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(names) == 0 {
		t.Fatalf("no %s in %s (%v)", pattern, dir, err)
	}
	size := func(name string) int64 {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	slices.SortFunc(names, func(a, b string) int { return int(size(a) - size(b)) })
	return names
}

func truncateHalf(t *testing.T, name string) {
	t.Helper()
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(name, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
}

// flip inverts n bytes of name from the given fraction of its length.
func flip(t *testing.T, name string, at float64, n int) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	i := int(float64(len(b)) * at)
	for j := i; j < i+n && j < len(b); j++ {
		b[j] ^= 0xff
	}
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// usable checks that a store opened in place of a discarded one is empty
// and takes and gives back a batch.
func usable(t *testing.T, s *Store) {
	t.Helper()
	if got := load(t, s); got.Revision != 0 || len(got.Streams) != 0 {
		t.Fatalf("the new store holds %+v, want nothing", got)
	}
	b := Batch{Revision: 1, Epoch: "fresh", Streams: []StreamMeta{meta("c", "pods", 1)}, Put: []Object{obj("c", "pods", "ns", "a", 1)}}
	if err := s.Apply(b); err != nil {
		t.Fatal(err)
	}
	want := snap{Revision: 1, Epoch: "fresh", Streams: []loadedStream{{Meta: b.Streams[0], Objects: b.Put}}}
	if d := diff(want, load(t, s)); d != "" {
		t.Fatalf("the new store (-want +got):\n%s", d)
	}
}

func TestOpenDiscardsAnUnusableStore(t *testing.T) {
	tests := []struct {
		name       string
		flush      bool
		opts       Options
		damage     func(t *testing.T, dir string)
		wantReason string
		wantErr    error
	}{
		{
			name:       "a table cut in half",
			flush:      true,
			damage:     func(t *testing.T, dir string) { truncateHalf(t, files(t, dir, "*.sst")[0]) },
			wantReason: ReasonTorn, wantErr: ErrCorrupt,
		},
		{
			name:       "a table missing",
			flush:      true,
			damage:     func(t *testing.T, dir string) { _ = os.Remove(files(t, dir, "*.sst")[0]) },
			wantReason: ReasonCorrupt, wantErr: ErrCorrupt,
		},
		{
			name:       "a table's data flipped, found by Verify",
			flush:      true,
			opts:       Options{Verify: true},
			damage:     func(t *testing.T, dir string) { flip(t, files(t, dir, "*.sst")[0], 0.3, 8) },
			wantReason: ReasonCorrupt, wantErr: ErrCorrupt,
		},
		{
			name:       "a table's end flipped",
			flush:      true,
			damage:     func(t *testing.T, dir string) { flip(t, files(t, dir, "*.sst")[0], 0.97, 16) },
			wantReason: ReasonCorrupt, wantErr: ErrCorrupt,
		},
		{
			name:   "another format version",
			opts:   Options{KeepDiscarded: true},
			damage: setFormat("fleetcache-snapshot/0"),
			// Kept aside: checked below.
			wantReason: ReasonFormat, wantErr: ErrFormat,
		},
		{
			name: "no format version",
			damage: func(t *testing.T, dir string) {
				s := openStore(t, dir, Options{})
				s.dbMu.RLock()
				err := s.db.Delete(formatKey, nil)
				s.dbMu.RUnlock()
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			},
			wantReason: ReasonCorrupt, wantErr: ErrCorrupt,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			fill(t, dir, 10, tc.flush)
			tc.damage(t, dir)
			s, err := Open(dir, tc.opts)
			if s == nil {
				t.Fatalf("Open gave no store: %v", err)
			}
			t.Cleanup(func() { _ = s.Close() })
			var d *DiscardedError
			if !errors.As(err, &d) || !errors.Is(err, tc.wantErr) {
				t.Fatalf("Open: %v, want a *DiscardedError wrapping %v", err, tc.wantErr)
			}
			if d.Reason != tc.wantReason {
				t.Errorf("Reason = %q, want %q (%v)", d.Reason, tc.wantReason, d)
			}
			if s.Discarded() != d {
				t.Errorf("Discarded() = %v, want Open's error", s.Discarded())
			}
			if tc.opts.KeepDiscarded != (d.Kept != "") {
				t.Errorf("Kept = %q with KeepDiscarded %v", d.Kept, tc.opts.KeepDiscarded)
			}
			if d.Kept != "" {
				if kept, _ := filepath.Glob(filepath.Join(d.Kept, "*.log")); len(kept) == 0 {
					t.Errorf("the discarded store is not kept in %s", d.Kept)
				}
			}
			usable(t, s)
		})
	}
}

// currentManifest returns the manifest the engine's marker names: older
// ones may remain beside it.
func currentManifest(t *testing.T, dir string) string {
	t.Helper()
	markers := files(t, dir, "marker.manifest.*")
	_, name, ok := strings.Cut(filepath.Base(markers[len(markers)-1]), "MANIFEST")
	if !ok {
		t.Fatalf("marker %s names no manifest", markers[0])
	}
	return filepath.Join(dir, "MANIFEST"+name)
}

func setFormat(v string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		s := openStore(t, dir, Options{})
		if err := s.setFormat(v); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLoadDiscardsACorruptStore flips bytes in a table's data: Open does
// not read it (no Verify), Load does, and discards the store.
func TestLoadDiscardsACorruptStore(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	b := Batch{Revision: 1, Streams: []StreamMeta{meta("c", "pods", 1)}}
	for i := range 400 {
		b.Put = append(b.Put, Object{ObjectKey: ObjectKey{"c", "pods", "ns", fmt.Sprintf("pod-%04d", i)}, Value: body(i, 400)})
	}
	if err := s.Apply(b); err != nil {
		t.Fatal(err)
	}
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The middle of the table: objects, which Open does not read.
	flip(t, files(t, dir, "*.sst")[0], 0.5, 8)
	s = openStore(t, dir, Options{})
	_, err := loadErr(s)
	var d *DiscardedError
	if !errors.As(err, &d) || !errors.Is(err, ErrCorrupt) || d.Reason != ReasonCorrupt {
		t.Fatalf("Load: %v, want a *DiscardedError wrapping ErrCorrupt", err)
	}
	if s.Discarded() != d {
		t.Errorf("Discarded() = %v, want Load's error", s.Discarded())
	}
	usable(t, s)
}

// TestTornLog cuts the write-ahead log, as a crash mid-write leaves it:
// the store holds every batch up to one, whole, and none after it.
func TestTornLog(t *testing.T) {
	src := t.TempDir()
	want := fill(t, src, 12, false)
	for _, cut := range []float64{0.1, 0.35, 0.5, 0.8, 0.99} {
		t.Run(fmt.Sprintf("cut=%v", cut), func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, src, dir)
			logs := files(t, dir, "*.log")
			name := logs[len(logs)-1]
			fi, err := os.Stat(name)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(name, int64(float64(fi.Size())*cut)); err != nil {
				t.Fatal(err)
			}
			wholeOrDiscarded(t, dir, want)
		})
	}
}

// TestFlippedManifest flips bytes in the manifest, which lists the
// tables: the engine drops a bad record at its end, as a crash leaves it,
// and refuses one elsewhere. Either way the store holds a whole batch
// prefix or is discarded.
func TestFlippedManifest(t *testing.T) {
	src := t.TempDir()
	want := fill(t, src, 12, true)
	for _, at := range []float64{0.05, 0.3, 0.6, 0.95} {
		t.Run(fmt.Sprintf("at=%v", at), func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, src, dir)
			flip(t, currentManifest(t, dir), at, 4)
			wholeOrDiscarded(t, dir, want)
		})
	}
}

// wholeOrDiscarded opens the damaged store in dir and checks that it holds
// what Load gave after one of the batches (want[i] after i batches) or
// was discarded and is usable.
func wholeOrDiscarded(t *testing.T, dir string, want []snap) {
	t.Helper()
	s, err := Open(dir, Options{Verify: true})
	if s == nil {
		t.Fatalf("Open gave no store: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	var d *DiscardedError
	if errors.As(err, &d) {
		t.Logf("discarded: %s", d.Reason)
		usable(t, s)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	got := load(t, s)
	if got.Revision >= uint64(len(want)) {
		t.Fatalf("revision %d, but only %d batches were applied", got.Revision, len(want)-1)
	}
	if d := diff(want[got.Revision], got); d != "" {
		t.Fatalf("the store holds part of batch %d (-want +got):\n%s", got.Revision, d)
	}
	t.Logf("holds the first %d of %d batches", got.Revision, len(want)-1)
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenTwice(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	if err := s.Apply(Batch{Revision: 1, Streams: []StreamMeta{meta("c", "pods", 1)}}); err != nil {
		t.Fatal(err)
	}
	other, err := Open(dir, Options{})
	if !errors.Is(err, ErrLocked) || other != nil {
		t.Fatalf("second Open = %v, %v; want no store and ErrLocked", other, err)
	}
	if got := load(t, s); got.Revision != 1 || len(got.Streams) != 1 {
		t.Errorf("the first store now holds %+v", got)
	}
}

// holdEnv names the directory TestHoldStore holds open, in a child
// process of TestOpenHeldByAnotherProcess.
const holdEnv = "SNAPSHOT_TEST_HOLD_DIR"

func TestOpenHeldByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, 1, false)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHoldStore$")
	cmd.Env = append(os.Environ(), holdEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	}()
	lines := bufio.NewScanner(stdout)
	held := false
	for !held && lines.Scan() {
		held = strings.TrimSpace(lines.Text()) == "held"
	}
	if !held {
		t.Fatalf("the child did not hold the store: %v", lines.Err())
	}
	s, err := Open(dir, Options{})
	if !errors.Is(err, ErrLocked) || s != nil {
		t.Fatalf("Open = %v, %v; want no store and ErrLocked", s, err)
	}
	if !strings.Contains(err.Error(), dir) {
		t.Errorf("the error does not name the directory: %v", err)
	}
	// The store is left as it was: once the child lets go, it opens.
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	s = openStore(t, dir, Options{})
	if got := load(t, s); got.Revision != 1 {
		t.Errorf("after the child let go: revision %d, want 1", got.Revision)
	}
}

// TestHoldStore is the child of TestOpenHeldByAnotherProcess: it holds
// the store open until its standard input closes.
func TestHoldStore(t *testing.T) {
	dir := os.Getenv(holdEnv)
	if dir == "" {
		t.Skip("run by TestOpenHeldByAnotherProcess")
	}
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("held")
	_, _ = bufio.NewReader(os.Stdin).ReadString(0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
