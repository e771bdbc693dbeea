package kubeapi_test

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/fleetcache/fleetcache/internal/fleetctl"
)

// TestKubeconfigCommand: kubectl fleet kubeconfig --write adds a context per
// cluster, on which kubectl reads each cluster through fleetcache as it
// reads the member.
func TestKubeconfigCommand(t *testing.T) {
	f := startFleet(t, kubeapiOptions())
	// kubectl fleet's own context: fleetcache's root URL.
	cfg, err := clientcmd.LoadFromFile(f.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	file := t.TempDir() + "/kubeconfig"
	cfg.Clusters = map[string]*clientcmdapi.Cluster{"fleetcache": {Server: f.url, CertificateAuthorityData: f.ca}, "c1": cfg.Clusters["c1"]}
	cfg.AuthInfos = map[string]*clientcmdapi.AuthInfo{"me": {Token: f.env.Cluster("c1").AdminConfig().BearerToken}, "c1": cfg.AuthInfos["c1"]}
	cfg.Contexts = map[string]*clientcmdapi.Context{"fleetcache": {Cluster: "fleetcache", AuthInfo: "me"}, "c1": cfg.Contexts["c1"]}
	cfg.CurrentContext = "c1"
	if err := clientcmd.WriteToFile(*cfg, file); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := fleetctl.Main(t.Context(), []string{"kubeconfig", "--kubeconfig", file, "--write"}, &stdout, &stderr); code != 0 {
		t.Fatalf("kubectl fleet kubeconfig: %d: %s", code, stderr.String())
	}
	for _, c := range []string{"-c1", "-c2", ""} {
		if !strings.Contains(stdout.String(), `Context "fleet`+c+`" written to `+file) {
			t.Errorf("kubectl fleet kubeconfig printed %q", stdout.String())
		}
	}
	written, err := clientcmd.LoadFromFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if written.CurrentContext != "c1" || written.Contexts["fleet-c2"].AuthInfo != "me" || written.Clusters["fleet-c2"].Server != f.url+"/clusters/c2" {
		t.Errorf("the kubeconfig written: current %q, fleet-c2 %+v on %+v", written.CurrentContext, written.Contexts["fleet-c2"], written.Clusters["fleet-c2"])
	}
	g := *f
	g.kubeconfig = file
	want, err := g.kubectl(t, "--context", "c1", "get", "namespaces", "kube-system", "-o", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := g.kubectl(t, "--context", "fleet-c1", "get", "namespaces", "kube-system", "-o", "yaml"); err != nil || got != want {
		t.Errorf("through the written context: %v\n%s\nfrom the member:\n%s", err, got, want)
	}
	if got, err := g.kubectl(t, "--context", "fleet", "get", "namespaces", "--field-selector", "metadata.name=kube-system", "-o", "name"); err != nil || got != "namespace/kube-system\nnamespace/kube-system\n" {
		t.Errorf("the fleet's context: %q, %v, want kube-system of both clusters", got, err)
	}

	// Without --write, the kubeconfig is printed, the file unchanged.
	stdout.Reset()
	if code := fleetctl.Main(t.Context(), []string{"kubeconfig", "--kubeconfig", file, "--context", "fleetcache"}, &stdout, &stderr); code != 0 {
		t.Fatalf("kubectl fleet kubeconfig: %d: %s", code, stderr.String())
	}
	printed, err := clientcmd.Load(stdout.Bytes())
	if err != nil || len(printed.Contexts) != 3 || printed.AuthInfos["me"] == nil || printed.Clusters["fleet-c1"].Server != f.url+"/clusters/c1" {
		t.Errorf("printed: %v\n%s", err, stdout.String())
	}
}
