// Command execplugin is a client-go exec credential plugin for tests: it
// prints the token held in the file $TOKEN_FILE with an expiry
// $EXPIRES_IN (a Go duration) from now, and appends one line per run to
// $LOG_FILE with the server and the exec extension that client-go passed
// in KUBERNETES_EXEC_INFO (with provideClusterInfo), so that tests can
// count the refreshes and see the cluster info.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "execplugin:", err)
		os.Exit(1)
	}
}

func run() error {
	token, err := os.ReadFile(os.Getenv("TOKEN_FILE"))
	if err != nil {
		return err
	}
	expiresIn, err := time.ParseDuration(os.Getenv("EXPIRES_IN"))
	if err != nil {
		return fmt.Errorf("EXPIRES_IN: %w", err)
	}
	var info struct {
		Spec struct {
			Cluster *struct {
				Server string          `json:"server"`
				Config json.RawMessage `json:"config"`
			} `json:"cluster"`
		} `json:"spec"`
	}
	if v := os.Getenv("KUBERNETES_EXEC_INFO"); v != "" {
		if err := json.Unmarshal([]byte(v), &info); err != nil {
			return fmt.Errorf("KUBERNETES_EXEC_INFO: %w", err)
		}
	}
	line := "run"
	if c := info.Spec.Cluster; c != nil {
		line = fmt.Sprintf("run server=%s config=%s", c.Server, c.Config)
	}
	if path := os.Getenv("LOG_FILE"); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		fmt.Fprintln(f, line)
		if err := f.Close(); err != nil {
			return err
		}
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"apiVersion": "client.authentication.k8s.io/v1",
		"kind":       "ExecCredential",
		"status": map[string]any{
			"token":               strings.TrimSpace(string(token)),
			"expirationTimestamp": time.Now().Add(expiresIn).UTC().Format(time.RFC3339),
		},
	})
}
