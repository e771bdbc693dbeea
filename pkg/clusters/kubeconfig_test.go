package clusters

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// summary is what the kubeconfig tests check of a loaded cluster.
type summary struct {
	Name             string
	Host             string
	BearerToken      string
	BearerTokenFile  string
	Username         string
	CAData           string
	CAFile           string
	Insecure         bool
	Exec             string
	StdinUnavailable bool
}

func summarize(t *testing.T, cs []Cluster) []summary {
	t.Helper()
	var out []summary
	for _, c := range cs {
		if c.Config == nil {
			t.Fatalf("cluster %q has a nil Config", c.Name)
		}
		if c.Config.Timeout != 0 {
			t.Errorf("cluster %q: Config.Timeout = %v, want 0", c.Name, c.Config.Timeout)
		}
		s := summary{
			Name:            c.Name,
			Host:            c.Config.Host,
			BearerToken:     c.Config.BearerToken,
			BearerTokenFile: c.Config.BearerTokenFile,
			Username:        c.Config.Username,
			CAData:          string(c.Config.CAData),
			CAFile:          c.Config.CAFile,
			Insecure:        c.Config.Insecure,
		}
		if c.Config.ExecProvider != nil {
			s.Exec = c.Config.ExecProvider.Command
			s.StdinUnavailable = c.Config.ExecProvider.StdinUnavailable
		}
		out = append(out, s)
	}
	return out
}

// testKubeconfig returns a kubeconfig with three usable contexts:
//
//	one:   https://one.example:6443, CA data, token "token-one"
//	two:   https://two.example, insecure, basic auth
//	three: https://one.example:6443, exec plugin
func testKubeconfig() *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c1"] = &clientcmdapi.Cluster{Server: "https://one.example:6443", CertificateAuthorityData: []byte("ca-one")}
	cfg.Clusters["c2"] = &clientcmdapi.Cluster{Server: "https://two.example", InsecureSkipTLSVerify: true}
	cfg.AuthInfos["u1"] = &clientcmdapi.AuthInfo{Token: "token-one"}
	cfg.AuthInfos["u2"] = &clientcmdapi.AuthInfo{Username: "admin", Password: "secret"}
	cfg.AuthInfos["u3"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		Command:         "get-token",
		APIVersion:      "client.authentication.k8s.io/v1",
		InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
	}}
	cfg.Contexts["one"] = &clientcmdapi.Context{Cluster: "c1", AuthInfo: "u1"}
	cfg.Contexts["two"] = &clientcmdapi.Context{Cluster: "c2", AuthInfo: "u2"}
	cfg.Contexts["three"] = &clientcmdapi.Context{Cluster: "c1", AuthInfo: "u3"}
	cfg.CurrentContext = "two"
	return cfg
}

var (
	sumOne   = summary{Name: "one", Host: "https://one.example:6443", BearerToken: "token-one", CAData: "ca-one"}
	sumTwo   = summary{Name: "two", Host: "https://two.example", Username: "admin", Insecure: true}
	sumThree = summary{Name: "three", Host: "https://one.example:6443", CAData: "ca-one", Exec: "get-token", StdinUnavailable: true}
)

func writeKubeconfig(t *testing.T, path string, cfg *clientcmdapi.Config) string {
	t.Helper()
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeFile(t *testing.T, path, data string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestFromKubeconfig(t *testing.T) {
	tests := []struct {
		name string
		// file writes the kubeconfig into dir and returns its path.
		file     func(t *testing.T, dir string) string
		contexts []string
		want     []summary
		// wantErr lists substrings of the error; nil means no error.
		wantErr []string
	}{
		{
			name: "all contexts sorted by name",
			file: func(t *testing.T, dir string) string {
				return writeKubeconfig(t, filepath.Join(dir, "config"), testKubeconfig())
			},
			want: []summary{sumOne, sumThree, sumTwo},
		},
		{
			name: "named contexts in the order given",
			file: func(t *testing.T, dir string) string {
				return writeKubeconfig(t, filepath.Join(dir, "config"), testKubeconfig())
			},
			contexts: []string{"two", "one", "two"},
			want:     []summary{sumTwo, sumOne},
		},
		{
			name: "unknown context is named, the others load",
			file: func(t *testing.T, dir string) string {
				return writeKubeconfig(t, filepath.Join(dir, "config"), testKubeconfig())
			},
			contexts: []string{"one", "nope"},
			want:     []summary{sumOne},
			wantErr:  []string{`context "nope": context not found`, "config"},
		},
		{
			name: "context pointing at a missing cluster",
			file: func(t *testing.T, dir string) string {
				cfg := testKubeconfig()
				cfg.Contexts["broken"] = &clientcmdapi.Context{Cluster: "gone", AuthInfo: "u1"}
				return writeKubeconfig(t, filepath.Join(dir, "config"), cfg)
			},
			want:    []summary{sumOne, sumThree, sumTwo},
			wantErr: []string{`context "broken": cluster "gone" not found`},
		},
		{
			name: "context pointing at a missing user",
			file: func(t *testing.T, dir string) string {
				cfg := testKubeconfig()
				cfg.Contexts["broken"] = &clientcmdapi.Context{Cluster: "c1", AuthInfo: "nobody"}
				return writeKubeconfig(t, filepath.Join(dir, "config"), cfg)
			},
			contexts: []string{"broken"},
			wantErr:  []string{`context "broken": user "nobody" not found`},
		},
		{
			name: "context without a cluster",
			file: func(t *testing.T, dir string) string {
				cfg := testKubeconfig()
				cfg.Contexts["broken"] = &clientcmdapi.Context{AuthInfo: "u1"}
				return writeKubeconfig(t, filepath.Join(dir, "config"), cfg)
			},
			contexts: []string{"broken"},
			wantErr:  []string{`context "broken": no cluster set`},
		},
		{
			name: "cluster without a server",
			file: func(t *testing.T, dir string) string {
				cfg := testKubeconfig()
				cfg.Clusters["empty"] = &clientcmdapi.Cluster{InsecureSkipTLSVerify: true}
				cfg.Contexts["broken"] = &clientcmdapi.Context{Cluster: "empty"}
				return writeKubeconfig(t, filepath.Join(dir, "config"), cfg)
			},
			contexts: []string{"broken"},
			wantErr:  []string{`context "broken"`, `no server found for cluster "empty"`},
		},
		{
			name: "context name with white space",
			file: func(t *testing.T, dir string) string {
				cfg := testKubeconfig()
				cfg.Contexts["my cluster"] = &clientcmdapi.Context{Cluster: "c1"}
				return writeKubeconfig(t, filepath.Join(dir, "config"), cfg)
			},
			contexts: []string{"my cluster"},
			wantErr:  []string{`context "my cluster": name contains ' '`},
		},
		{
			name: "user without credentials is anonymous",
			file: func(t *testing.T, dir string) string {
				cfg := testKubeconfig()
				cfg.Contexts["anon"] = &clientcmdapi.Context{Cluster: "c2"}
				return writeKubeconfig(t, filepath.Join(dir, "config"), cfg)
			},
			contexts: []string{"anon"},
			want:     []summary{{Name: "anon", Host: "https://two.example", Insecure: true}},
		},
		{
			name: "relative token and CA files resolve against the kubeconfig's directory",
			file: func(t *testing.T, dir string) string {
				writeFile(t, filepath.Join(dir, "token"), "token-from-file")
				writeFile(t, filepath.Join(dir, "ca.crt"), "ca-from-file")
				cfg := clientcmdapi.NewConfig()
				cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://files.example", CertificateAuthority: "ca.crt"}
				cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{TokenFile: "token"}
				cfg.Contexts["files"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
				return writeKubeconfig(t, filepath.Join(dir, "config"), cfg)
			},
			want: []summary{{
				Name:            "files",
				Host:            "https://files.example",
				BearerToken:     "token-from-file",
				BearerTokenFile: "TMP/token",
				CAFile:          "TMP/ca.crt",
			}},
		},
		{
			name: "missing token file",
			file: func(t *testing.T, dir string) string {
				cfg := clientcmdapi.NewConfig()
				cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://files.example"}
				cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{TokenFile: "no-such-token"}
				cfg.Contexts["files"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
				return writeKubeconfig(t, filepath.Join(dir, "config"), cfg)
			},
			wantErr: []string{`context "files"`, "no-such-token"},
		},
		{
			name:    "missing file",
			file:    func(t *testing.T, dir string) string { return filepath.Join(dir, "absent") },
			wantErr: []string{"load kubeconfig", "absent", "no such file"},
		},
		{
			name:    "unreadable file",
			file:    func(t *testing.T, dir string) string { return dir },
			wantErr: []string{"load kubeconfig", "is a directory"},
		},
		{
			name: "malformed YAML",
			file: func(t *testing.T, dir string) string {
				return writeFile(t, filepath.Join(dir, "config"), "apiVersion: v1\nclusters: [\n")
			},
			wantErr: []string{"load kubeconfig", "config"},
		},
		{
			name: "no contexts",
			file: func(t *testing.T, dir string) string {
				return writeFile(t, filepath.Join(dir, "config"), "")
			},
			wantErr: []string{"no contexts"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := tt.file(t, dir)
			cs, err := FromKubeconfig(path, tt.contexts...)
			got := summarize(t, cs)
			for i := range got {
				got[i].BearerTokenFile = strings.ReplaceAll(got[i].BearerTokenFile, dir, "TMP")
				got[i].CAFile = strings.ReplaceAll(got[i].CAFile, dir, "TMP")
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("FromKubeconfig() clusters (-want +got):\n%s", diff)
			}
			checkErr(t, err, tt.wantErr)
		})
	}
}

// TestFromKubeconfigExecConfigPerContext checks that two contexts sharing an
// exec user each get the cluster info of their own cluster.
func TestFromKubeconfigExecConfigPerContext(t *testing.T) {
	cfg := testKubeconfig()
	cfg.AuthInfos["u3"].Exec.ProvideClusterInfo = true
	cfg.Contexts["three-b"] = &clientcmdapi.Context{Cluster: "c2", AuthInfo: "u3"}
	path := writeKubeconfig(t, filepath.Join(t.TempDir(), "config"), cfg)
	cs, err := FromKubeconfig(path, "three", "three-b")
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 {
		t.Fatalf("got %d clusters, want 2", len(cs))
	}
	if cs[0].Config.ExecProvider == cs[1].Config.ExecProvider {
		t.Error("contexts share one ExecProvider")
	}
}

func checkErr(t *testing.T, err error, want []string) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Errorf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("got no error, want one containing %q", want)
	}
	for _, s := range want {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
}

func TestFromDir(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()

	one := clientcmdapi.NewConfig()
	one.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://a.example"}
	one.Contexts["x"] = &clientcmdapi.Context{Cluster: "c"}
	one.Contexts["y"] = &clientcmdapi.Context{Cluster: "c"}
	writeKubeconfig(t, filepath.Join(dir, "a.yaml"), one)

	writeFile(t, filepath.Join(dir, "b.conf"), "clusters: {{{")

	// c repeats y, and has a broken context next to a good one.
	three := clientcmdapi.NewConfig()
	three.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://c.example"}
	three.Contexts["y"] = &clientcmdapi.Context{Cluster: "c"}
	three.Contexts["z"] = &clientcmdapi.Context{Cluster: "c"}
	three.Contexts["zz"] = &clientcmdapi.Context{Cluster: "gone"}
	writeKubeconfig(t, filepath.Join(dir, "c"), three)

	// A Secret volume: the key is a link into a hidden directory.
	secret := clientcmdapi.NewConfig()
	secret.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://secret.example"}
	secret.Contexts["s"] = &clientcmdapi.Context{Cluster: "c"}
	if err := os.Mkdir(filepath.Join(dir, "..2025_01_01"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeKubeconfig(t, filepath.Join(dir, "..2025_01_01", "kubeconfig"), secret)
	symlink(t, "..2025_01_01", filepath.Join(dir, "..data"))
	symlink(t, filepath.Join("..data", "kubeconfig"), filepath.Join(dir, "d-secret"))

	symlink(t, filepath.Join(outside, "absent"), filepath.Join(dir, "e-dangling"))

	// Skipped: hidden files and subdirectories.
	hidden := clientcmdapi.NewConfig()
	hidden.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://hidden.example"}
	hidden.Contexts["h"] = &clientcmdapi.Context{Cluster: "c"}
	writeKubeconfig(t, filepath.Join(dir, ".hidden.yaml"), hidden)
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeKubeconfig(t, filepath.Join(dir, "sub", "config"), hidden)

	cs, err := FromDir(dir)
	want := []summary{
		{Name: "x", Host: "https://a.example"},
		{Name: "y", Host: "https://a.example"},
		{Name: "z", Host: "https://c.example"},
		{Name: "s", Host: "https://secret.example"},
	}
	if diff := cmp.Diff(want, summarize(t, cs)); diff != "" {
		t.Errorf("FromDir() clusters (-want +got):\n%s", diff)
	}
	checkErr(t, err, []string{
		filepath.Join(dir, "b.conf"),
		`kubeconfig ` + filepath.Join(dir, "c") + `: cluster "y" already defined in ` + filepath.Join(dir, "a.yaml"),
		`context "zz": cluster "gone" not found`,
		filepath.Join(dir, "e-dangling"),
	})
	if err != nil && strings.Contains(err.Error(), "hidden") {
		t.Errorf("error mentions a hidden file: %v", err)
	}
}

func TestFromDirErrors(t *testing.T) {
	tests := []struct {
		name    string
		dir     func(t *testing.T) string
		wantErr []string
	}{
		{
			name:    "missing directory",
			dir:     func(t *testing.T) string { return filepath.Join(t.TempDir(), "absent") },
			wantErr: []string{"read kubeconfig directory", "absent"},
		},
		{
			name:    "empty directory",
			dir:     func(t *testing.T) string { return t.TempDir() },
			wantErr: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs, err := FromDir(tt.dir(t))
			if len(cs) != 0 {
				t.Errorf("got %d clusters, want none", len(cs))
			}
			checkErr(t, err, tt.wantErr)
		})
	}
}

func symlink(t *testing.T, oldname, newname string) {
	t.Helper()
	if err := os.Symlink(oldname, newname); err != nil {
		t.Fatal(err)
	}
}

func FuzzFromKubeconfig(f *testing.F) {
	valid, err := clientcmd.Write(*testKubeconfig())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add([]byte(""))
	f.Add([]byte("apiVersion: v1\nkind: Config\nclusters: [\n"))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Config","clusters":[{"name":"c","cluster":{"server":"https://x"}}],"contexts":[{"name":"a","context":{"cluster":"c"}}]}`))
	f.Add([]byte("apiVersion: v1\nkind: Config\ncontexts:\n- name: a\n  context:\n    cluster: missing\n"))
	f.Add([]byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: \"::\"\ncontexts:\n- name: \"\"\n  context:\n    cluster: c\n"))
	f.Add([]byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://x\n    proxy-url: \"%zz\"\ncontexts:\n- name: a b\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user:\n    token: t\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "config")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		cs, err := FromKubeconfig(path)
		if err == nil && len(cs) == 0 {
			t.Fatal("no clusters and no error")
		}
		for _, c := range cs {
			if c.Name == "" || c.Config == nil || c.Config.Host == "" {
				t.Fatalf("cluster without name or host: %q %v", c.Name, c.Config)
			}
			if c.Config.Timeout != 0 {
				t.Fatalf("cluster %q: Timeout %v", c.Name, c.Config.Timeout)
			}
			if _, _, err := rest.DefaultServerUrlFor(c.Config); err != nil {
				t.Fatalf("cluster %q: bad host: %v", c.Name, err)
			}
		}
	})
}
