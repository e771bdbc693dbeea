package procmem

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		status  string
		want    Usage
		wantErr bool
	}{
		{
			name:   "linux",
			status: "Name:\tx\nVmPeak:\t  900 kB\nVmHWM:\t    2048 kB\nVmRSS:\t    1024 kB\nThreads:\t5\n",
			want:   Usage{RSS: 1 << 20, PeakRSS: 2 << 20},
		},
		{name: "no VmHWM", status: "VmRSS:\t1024 kB\n", wantErr: true},
		{name: "garbage", status: "VmRSS:\tlots\nVmHWM:\t1 kB\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse([]byte(tt.status))
			if (err != nil) != tt.wantErr {
				t.Fatalf("parse: error %v, want error %t", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parse (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRead(t *testing.T) {
	u, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	if u.RSS == 0 || u.PeakRSS < u.RSS {
		t.Errorf("Read() = %+v, want a non-zero RSS no larger than its peak", u)
	}
}

func TestWriteHeapProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heap.mem")
	if err := WriteHeapProfile(path); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() == 0 {
		t.Errorf("profile %s: %v, %v", path, st, err)
	}
	if err := WriteHeapProfile(filepath.Join(t.TempDir(), "missing", "heap.mem")); err == nil {
		t.Error("a profile written into a missing directory: no error")
	}
}
