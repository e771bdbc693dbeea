package columns

import (
	"strconv"
	"strings"
	"time"
)

// loadBalancerStatus is status.loadBalancer of Services and Ingresses.
type loadBalancerStatus struct {
	Ingress []struct {
		IP       string `json:"ip"`
		Hostname string `json:"hostname"`
	} `json:"ingress"`
}

// addresses are the load balancer's IPs, or hostnames where it has no IP.
func (s loadBalancerStatus) addresses() []string {
	var out []string
	for _, in := range s.Ingress {
		switch {
		case in.IP != "":
			out = append(out, in.IP)
		case in.Hostname != "":
			out = append(out, in.Hostname)
		}
	}
	return out
}

// printService prints Type, Cluster-IP, External-IP, Port(s) and Selector.
// External-IP is the external name of an ExternalName Service; for a
// LoadBalancer, its load balancer's addresses and then its external IPs,
// "<pending>" while it has none; otherwise the external IPs.
func printService(raw []byte, _ time.Time) ([]Column, error) {
	var s struct {
		Spec struct {
			Type         string            `json:"type"`
			ClusterIP    string            `json:"clusterIP"`
			ExternalIPs  []string          `json:"externalIPs"`
			ExternalName string            `json:"externalName"`
			Selector     map[string]string `json:"selector"`
			Ports        []struct {
				Port     int32  `json:"port"`
				NodePort int32  `json:"nodePort"`
				Protocol string `json:"protocol"`
			} `json:"ports"`
		} `json:"spec"`
		Status struct {
			LoadBalancer loadBalancerStatus `json:"loadBalancer"`
		} `json:"status"`
	}
	if err := decode(raw, &s); err != nil {
		return nil, err
	}
	var external string
	switch s.Spec.Type {
	case "ExternalName":
		external = s.Spec.ExternalName
	case "LoadBalancer":
		external = strings.Join(append(s.Status.LoadBalancer.addresses(), s.Spec.ExternalIPs...), ",")
		if external == "" {
			external = "<pending>"
		}
	default:
		external = none(strings.Join(s.Spec.ExternalIPs, ","))
	}
	ports := make([]string, len(s.Spec.Ports))
	for i, p := range s.Spec.Ports {
		port := strconv.Itoa(int(p.Port))
		if p.NodePort != 0 {
			port += ":" + strconv.Itoa(int(p.NodePort))
		}
		ports[i] = port + "/" + p.Protocol
	}
	return []Column{
		{"Type", s.Spec.Type},
		{"Cluster-IP", none(s.Spec.ClusterIP)},
		{"External-IP", external},
		{"Port(s)", none(strings.Join(ports, ","))},
		{"Selector", mapLabels(s.Spec.Selector)},
	}, nil
}

// printIngress prints Class, Hosts, Address and Ports. Hosts names the
// first three hosts of the rules, and how many rules more (counted from
// the third); "*" when no rule names one. Ports is "80", or "80, 443" with TLS.
func printIngress(raw []byte, _ time.Time) ([]Column, error) {
	var in struct {
		Spec struct {
			IngressClassName *string    `json:"ingressClassName"`
			TLS              []struct{} `json:"tls"`
			Rules            []struct {
				Host string `json:"host"`
			} `json:"rules"`
		} `json:"spec"`
		Status struct {
			LoadBalancer loadBalancerStatus `json:"loadBalancer"`
		} `json:"status"`
	}
	if err := decode(raw, &in); err != nil {
		return nil, err
	}
	class := "<none>"
	if c := in.Spec.IngressClassName; c != nil {
		class = *c
	}
	// Up to three hosts; a rule after the third host makes the rest "more".
	const shown = 3
	var hosts []string
	more := false
	for _, r := range in.Spec.Rules {
		if len(hosts) == shown {
			more = true
			break
		}
		if r.Host != "" {
			hosts = append(hosts, r.Host)
		}
	}
	hostText := strings.Join(hosts, ",")
	switch {
	case hostText == "":
		hostText = "*"
	case more:
		hostText += " + " + strconv.Itoa(len(in.Spec.Rules)-shown) + " more..."
	}
	ports := "80"
	if len(in.Spec.TLS) > 0 {
		ports = "80, 443"
	}
	return []Column{
		{"Class", class},
		{"Hosts", hostText},
		{"Address", strings.Join(in.Status.LoadBalancer.addresses(), ",")},
		{"Ports", ports},
	}, nil
}
