package snapshot

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// body returns a Pod as compact JSON of about size bytes, the parts that
// differ between Pods (names, UIDs, addresses, container IDs, times)
// drawn from i, so that it compresses as real bodies do.
func body(i, size int) []byte {
	r := rand.New(rand.NewPCG(uint64(i), 7))
	hex := func(n int) string {
		const digits = "0123456789abcdef"
		b := make([]byte, n)
		for j := range b {
			b[j] = digits[r.IntN(16)]
		}
		return string(b)
	}
	app := [...]string{"web", "api", "worker", "cache", "gateway"}[i%5]
	b := fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s-%s-%s","namespace":"team-%d",`+
		`"uid":"%s-%s-%s-%s-%s","resourceVersion":"%d","creationTimestamp":"2026-04-%02dT%02d:%02d:%02dZ",`+
		`"labels":{"app":%q,"pod-template-hash":%q,"tier":"backend"},`+
		`"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"%s-%s","uid":"%s","controller":true,"blockOwnerDeletion":true}]},`+
		`"spec":{"containers":[{"name":%q,"image":"registry.example.com/%s:1.%d.%d","ports":[{"containerPort":8080,"protocol":"TCP"}],`+
		`"resources":{"limits":{"cpu":"500m","memory":"512Mi"},"requests":{"cpu":"100m","memory":"128Mi"}},"env":[`,
		app, hex(10), hex(5), i%40, hex(8), hex(4), hex(4), hex(4), hex(12), 1000000+i, 1+i%28, i%24, i%60, (i*7)%60,
		app, hex(10), app, hex(10), hex(36), app, app, i%9, i%20)
	for j := 0; len(b) < size-900; j++ {
		if j > 0 {
			b = append(b, ',')
		}
		// Pods of one app share their spec, as a Deployment's do.
		b = fmt.Appendf(b, `{"name":"%s_SETTING_%d","value":"https://%s-%d.team-%d.svc.cluster.local:%d/v1"}`,
			strings.ToUpper(app), j, app, j, i%40, 8000+j)
	}
	b = fmt.Appendf(b, `],"volumeMounts":[{"name":"kube-api-access-%s","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}],`+
		`"terminationMessagePath":"/dev/termination-log","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always",`+
		`"nodeName":"node-%d","serviceAccountName":"default","priority":0},`+
		`"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-04-%02dT%02d:%02d:00Z"},`+
		`{"type":"PodScheduled","status":"True","lastTransitionTime":"2026-04-%02dT%02d:%02d:00Z"}],`+
		`"hostIP":"10.%d.%d.%d","podIP":"10.%d.%d.%d","startTime":"2026-04-%02dT%02d:%02d:00Z",`+
		`"containerStatuses":[{"name":%q,"ready":true,"restartCount":%d,"image":"registry.example.com/%s:1.%d.%d",`+
		`"containerID":"containerd://%s","started":true}],"qosClass":"Burstable"}}`,
		hex(5), i%300, 1+i%28, i%24, i%60, 1+i%28, i%24, i%60,
		r.IntN(256), r.IntN(256), r.IntN(256), r.IntN(256), r.IntN(256), r.IntN(256), 1+i%28, i%24, i%60,
		app, i%3, app, i%9, i%20, hex(64))
	return b
}
