package clusters

import (
	"bytes"
	"context"
	"errors"
	"time"

	"k8s.io/klog/v2"
)

// DefaultDirInterval is how often a DirSource reads its directory by default.
const DefaultDirInterval = 2 * time.Second

// DirSource registers the clusters of a kubeconfig directory (see FromDir) and
// follows the directory as files are added, changed and removed.
//
// It reads the directory every interval rather than subscribing to file
// system events: a Secret or ConfigMap mounted as a volume changes by swapping
// a symbolic link, which inotify reports unevenly, and a read of a few small
// files every few seconds costs nothing. A file that no longer loads keeps its
// clusters running on their last good configuration, each marked with the
// file's error.
type DirSource struct {
	dir      string
	interval time.Duration
	sink     SetSink

	read  bool                          // the directory was read once
	last  []dirFile                     // what the previous read found
	names map[string]map[string]Cluster // file path -> clusters it last defined
}

// NewDirSource returns a DirSource that reads dir every interval (default
// DefaultDirInterval when zero) and sets its list in sink.
func NewDirSource(dir string, interval time.Duration, sink SetSink) *DirSource {
	if interval <= 0 {
		interval = DefaultDirInterval
	}
	return &DirSource{dir: dir, interval: interval, sink: sink, names: map[string]map[string]Cluster{}}
}

// Name is the source name under which the directory's clusters are set.
func (d *DirSource) Name() string { return "kubeconfig directory " + d.dir }

// Start reads the directory now and then every interval until ctx ends.
func (d *DirSource) Start(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("source", d.Name())
	ticker := time.NewTicker(d.interval)
	defer ticker.Stop()
	for {
		if err := d.sync(); err != nil {
			logger.Error(err, "Kubeconfig directory")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// sync reads the directory and, when any file changed, sets the list.
func (d *DirSource) sync() error {
	files, err := loadDir(d.dir)
	if err != nil {
		// An unreadable directory (being replaced, say) changes nothing.
		return err
	}
	if d.read && sameFiles(files, d.last) {
		return nil
	}
	d.read, d.last = true, files

	var (
		cs      []Cluster
		errs    []error
		invalid = map[string]error{}
		seen    = map[string]bool{}
	)
	for _, f := range files {
		seen[f.path] = true
		errs = append(errs, f.err)
		if len(f.clusters) > 0 || f.err == nil {
			cur := make(map[string]Cluster, len(f.clusters))
			for _, c := range f.clusters {
				cur[c.Name] = c
			}
			d.names[f.path] = cur
			cs = append(cs, f.clusters...)
			continue
		}
		// The file names no usable cluster any more: its clusters stay on
		// their last good configuration, marked with the file's error.
		for name := range d.names[f.path] {
			invalid[name] = f.err
		}
	}
	for path := range d.names {
		if !seen[path] {
			delete(d.names, path)
		}
	}
	errs = append(errs, d.sink.Set(d.Name(), cs, invalid))
	return errors.Join(errs...)
}

// sameFiles reports whether two reads found the same files with the same content.
func sameFiles(a, b []dirFile) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].path != b[i].path || !bytes.Equal(a[i].content, b[i].content) || (a[i].content == nil) != (b[i].content == nil) {
			return false
		}
	}
	return true
}
