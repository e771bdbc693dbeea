package memlimit

import (
	"math"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func TestApply(t *testing.T) {
	const gib = 1 << 30
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	v2 := "0::/kubepods/pod1/ctr\n"
	v1 := "12:memory:/docker/abc\n11:cpu,cpuacct:/docker/abc\n0::/\n"
	tests := []struct {
		name    string
		env     string
		files   fstest.MapFS
		want    Decision
		wantSet int64 // what apply set, 0 for nothing
		wantErr bool
	}{
		{
			name:  "GOMEMLIMIT set: left alone",
			env:   "1GiB",
			files: fstest.MapFS{"proc/self/cgroup": file(v2), "sys/fs/cgroup/memory.max": file("2147483648\n")},
			want:  Decision{Limit: gib, Source: "GOMEMLIMIT"},
		},
		{
			name:    "cgroup v2, the process's own cgroup",
			files:   fstest.MapFS{"proc/self/cgroup": file(v2), "sys/fs/cgroup/kubepods/pod1/ctr/memory.max": file("2147483648\n")},
			want:    Decision{Limit: 1932735283, Source: "/sys/fs/cgroup/kubepods/pod1/ctr/memory.max", ContainerLimit: 2 * gib},
			wantSet: 1932735283,
		},
		{
			name:    "cgroup v2 in a cgroup namespace: the mount's root",
			files:   fstest.MapFS{"proc/self/cgroup": file("0::/\n"), "sys/fs/cgroup/memory.max": file("1073741824\n")},
			want:    Decision{Limit: 966367641, Source: "/sys/fs/cgroup/memory.max", ContainerLimit: gib},
			wantSet: 966367641,
		},
		{
			name:    "cgroup v2, host path not mounted: the mount's root",
			files:   fstest.MapFS{"proc/self/cgroup": file(v2), "sys/fs/cgroup/memory.max": file("1073741824\n")},
			want:    Decision{Limit: 966367641, Source: "/sys/fs/cgroup/memory.max", ContainerLimit: gib},
			wantSet: 966367641,
		},
		{
			name:  "cgroup v2 without a limit",
			files: fstest.MapFS{"proc/self/cgroup": file(v2), "sys/fs/cgroup/kubepods/pod1/ctr/memory.max": file("max\n")},
			want:  Decision{Limit: math.MaxInt64},
		},
		{
			name:    "cgroup v1 (hybrid)",
			files:   fstest.MapFS{"proc/self/cgroup": file(v1), "sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": file("536870912\n")},
			want:    Decision{Limit: 483183820, Source: "/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", ContainerLimit: gib / 2},
			wantSet: 483183820,
		},
		{
			name:    "cgroup v1, the mount's root",
			files:   fstest.MapFS{"proc/self/cgroup": file(v1), "sys/fs/cgroup/memory/memory.limit_in_bytes": file("536870912\n")},
			want:    Decision{Limit: 483183820, Source: "/sys/fs/cgroup/memory/memory.limit_in_bytes", ContainerLimit: gib / 2},
			wantSet: 483183820,
		},
		{
			name:  "cgroup v1 without a limit",
			files: fstest.MapFS{"proc/self/cgroup": file(v1), "sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": file("9223372036854771712\n")},
			want:  Decision{Limit: math.MaxInt64},
		},
		{
			name:  "no cgroup files",
			files: fstest.MapFS{"proc/self/cgroup": file(v2)},
			want:  Decision{Limit: math.MaxInt64},
		},
		{
			name:  "no /proc",
			files: fstest.MapFS{},
			want:  Decision{Limit: math.MaxInt64},
		},
		{
			name:    "garbage in memory.max",
			files:   fstest.MapFS{"proc/self/cgroup": file(v2), "sys/fs/cgroup/memory.max": file("lots\n")},
			want:    Decision{Limit: math.MaxInt64},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The runtime's limit as the fake setter keeps it: GOMEMLIMIT's
			// value when set, none otherwise.
			current := int64(math.MaxInt64)
			if tt.env != "" {
				current = gib
			}
			var set int64
			setLimit := func(n int64) int64 {
				prev := current
				if n >= 0 {
					set, current = n, n
				}
				return prev
			}
			got, err := apply(tt.env, tt.files, Ratio, setLimit)
			if (err != nil) != tt.wantErr {
				t.Fatalf("apply: error %v, want error %t", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("apply (-want +got):\n%s", diff)
			}
			if set != tt.wantSet {
				t.Errorf("apply set the limit to %d, want %d", set, tt.wantSet)
			}
		})
	}
}
