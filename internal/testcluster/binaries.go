package testcluster

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

const (
	// modulePath identifies the go.mod whose directory holds bin/.
	modulePath = "github.com/fleetcache/fleetcache"
	// binDirEnv overrides the directory that holds etcd and kube-apiserver.
	binDirEnv = "FLEETCACHE_TESTBIN"
)

// binaries are the absolute paths of the server binaries.
type binaries struct {
	etcd, apiserver string
}

// findBinaries locates etcd and kube-apiserver in $FLEETCACHE_TESTBIN or else
// in <module root>/bin, found by walking up from the working directory (a test
// runs in its package directory).
func findBinaries() (binaries, error) {
	dir := os.Getenv(binDirEnv)
	if dir == "" {
		root, err := moduleRoot()
		if err != nil {
			return binaries{}, fmt.Errorf("find test binaries (set %s to the directory holding etcd and kube-apiserver): %w", binDirEnv, err)
		}
		dir = filepath.Join(root, "bin")
	}
	b := binaries{etcd: filepath.Join(dir, "etcd"), apiserver: filepath.Join(dir, "kube-apiserver")}
	var missing []string
	for _, path := range []string{b.etcd, b.apiserver} {
		info, err := os.Stat(path)
		if err != nil || info.IsDir() || info.Mode().Perm()&0o111 == 0 {
			missing = append(missing, path)
		}
	}
	if len(missing) > 0 {
		return binaries{}, fmt.Errorf("test binaries missing or not executable: %s; run \"make testbin\" in the module root (or set %s to a directory holding etcd and kube-apiserver)",
			strings.Join(missing, ", "), binDirEnv)
	}
	return b, nil
}

// moduleRoot walks up from the working directory to the go.mod of modulePath.
func moduleRoot() (string, error) {
	start, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("get working directory: %w", err)
	}
	for dir := start; ; dir = filepath.Dir(dir) {
		ok, err := declaresModule(filepath.Join(dir, "go.mod"))
		if err != nil {
			return "", err
		}
		if ok {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("no go.mod of module %s above %s", modulePath, start)
		}
	}
}

// declaresModule reports whether the go.mod at path declares modulePath. A
// missing file is not an error.
func declaresModule(path string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == modulePath, nil
		}
	}
	return false, s.Err()
}
