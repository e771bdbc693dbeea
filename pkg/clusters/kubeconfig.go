package clusters

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// FromKubeconfig returns one Cluster per context of the kubeconfig file at path,
// sorted by name, or, if contexts are given, one per named context in that order.
// The cluster name is the context name; the current-context is not special.
//
// Each Config is what clientcmd builds for the context without overrides, with
// relative file paths resolved against the file's directory. Config.Timeout is
// never set: the runner picks per-request deadlines. Exec credential plugins are
// marked as having no standard input, since fleetcache runs unattended.
//
// A file that cannot be read or parsed, or holds no contexts, yields only an
// error. Otherwise FromKubeconfig returns the clusters whose contexts are usable
// together with an error joining one error per context that is not: a named
// context that does not exist, a context whose cluster or user entry is missing,
// an invalid context name, or whatever clientcmd rejects. Every error names the
// file and the context.
func FromKubeconfig(path string, contexts ...string) ([]Cluster, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", path, err)
	}
	return fromKubeconfig(path, data, contexts...)
}

// fromKubeconfig is FromKubeconfig on the file's content, read by the caller.
func fromKubeconfig(path string, data []byte, contexts ...string) ([]Cluster, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", path, err)
	}
	// As clientcmd.LoadFromFile does: relative paths are relative to the file.
	for _, c := range cfg.Clusters {
		c.LocationOfOrigin = path
	}
	for _, u := range cfg.AuthInfos {
		u.LocationOfOrigin = path
	}
	if err := clientcmd.ResolveLocalPaths(cfg); err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", path, err)
	}
	if len(contexts) == 0 {
		if len(cfg.Contexts) == 0 {
			return nil, fmt.Errorf("load kubeconfig %s: no contexts", path)
		}
		contexts = slices.Sorted(maps.Keys(cfg.Contexts))
	}

	var (
		out  []Cluster
		errs []error
		seen = make(map[string]bool, len(contexts))
	)
	for _, name := range contexts {
		if seen[name] {
			continue
		}
		seen[name] = true
		rc, err := contextConfig(cfg, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("kubeconfig %s: context %q: %w", path, name, err))
			continue
		}
		out = append(out, Cluster{Name: name, Config: rc})
	}
	return out, errors.Join(errs...)
}

// contextConfig builds and checks the Config of the named context of cfg.
func contextConfig(cfg *clientcmdapi.Config, name string) (*rest.Config, error) {
	kctx, ok := cfg.Contexts[name]
	if !ok {
		return nil, errors.New("context not found")
	}
	if err := validateName(name); err != nil {
		return nil, err
	}
	// clientcmd quietly substitutes empty entries for missing ones, which ends
	// in a vague "no configuration has been provided" or, for a user, in
	// anonymous access; say what is missing instead.
	if kctx.Cluster == "" {
		return nil, errors.New("no cluster set")
	}
	if _, ok := cfg.Clusters[kctx.Cluster]; !ok {
		return nil, fmt.Errorf("cluster %q not found", kctx.Cluster)
	}
	if _, ok := cfg.AuthInfos[kctx.AuthInfo]; kctx.AuthInfo != "" && !ok {
		return nil, fmt.Errorf("user %q not found", kctx.AuthInfo)
	}
	// Each context gets its own copy: ClientConfig hands out pointers into the
	// config (the exec plugin config) and writes through them.
	rc, err := clientcmd.NewNonInteractiveClientConfig(*cfg.DeepCopy(), name, nil, nil).ClientConfig()
	if err != nil {
		return nil, err
	}
	if rc.ExecProvider != nil {
		rc.ExecProvider.StdinUnavailable = true
		rc.ExecProvider.StdinUnavailableMessage = "fleetcache runs exec credential plugins without a terminal"
	}
	if err := validate(Cluster{Name: name, Config: rc}); err != nil {
		return nil, err
	}
	return rc, nil
}

// FromDir returns the clusters of every kubeconfig file directly in dir, in file
// name order and, within a file, in context name order.
//
// Every entry of dir whose name does not start with "." and that is a regular
// file, or a symbolic link to one, counts as a kubeconfig, whatever its
// extension: kubeconfigs are often named "config", and a Secret mounted as a
// volume shows each key as a symbolic link named after the key (the hidden
// "..data" entries are skipped). Subdirectories are not read. Keep other files
// out of dir: each one is reported as a bad file.
//
// A bad file does not stop the others: FromDir returns the clusters that loaded
// together with an error joining one error per problem, each naming its file.
// A cluster name that an earlier file already defined is such a problem: the
// first definition is kept and the error names both files. Only a dir that
// cannot be read yields no clusters.
func FromDir(dir string) ([]Cluster, error) {
	files, err := loadDir(dir)
	if err != nil {
		return nil, err
	}
	var (
		out  []Cluster
		errs []error
	)
	for _, f := range files {
		out = append(out, f.clusters...)
		errs = append(errs, f.err)
	}
	return out, errors.Join(errs...)
}

// dirFile is what one file of a kubeconfig directory yields.
type dirFile struct {
	path     string
	content  []byte    // nil when the file could not be read
	clusters []Cluster // those not defined by an earlier file
	err      error
}

// loadDir loads the kubeconfig files of dir as FromDir documents, one result
// per file in file name order.
func loadDir(dir string) ([]dirFile, error) {
	entries, err := os.ReadDir(dir) // sorted by file name
	if err != nil {
		return nil, fmt.Errorf("read kubeconfig directory: %w", err)
	}
	var (
		out  []dirFile
		from = make(map[string]string) // cluster name -> file that defined it
	)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		f := dirFile{path: filepath.Join(dir, e.Name())}
		fi, err := os.Stat(f.path) // follows symbolic links
		if err != nil {
			f.err = fmt.Errorf("load kubeconfig %s: %w", f.path, err)
			out = append(out, f)
			continue
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		if f.content, err = os.ReadFile(f.path); err != nil {
			f.err = fmt.Errorf("load kubeconfig %s: %w", f.path, err)
			out = append(out, f)
			continue
		}
		cs, err := fromKubeconfig(f.path, f.content)
		errs := []error{err}
		for _, c := range cs {
			if first, dup := from[c.Name]; dup {
				errs = append(errs, fmt.Errorf("kubeconfig %s: cluster %q already defined in %s", f.path, c.Name, first))
				continue
			}
			from[c.Name] = f.path
			f.clusters = append(f.clusters, c)
		}
		f.err = errors.Join(errs...)
		out = append(out, f)
	}
	return out, nil
}
