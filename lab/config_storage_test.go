package lab

import (
	"strings"
	"testing"
)

func TestStorageRole(t *testing.T) {
	const head = "name: s\nkind: alpha\nalpha: {}\nnetwork: {management: 10.231.98.0/24, pods: 10.248.0.0/16, services: 10.250.98.0/24}\nhosts:\n  - {name: cp1, roles: [etcd, control-plane, worker], address: 10.231.98.11}\n"
	for _, c := range []struct{ name, hosts, want string }{
		{"one storage host", "  - {name: storage, roles: [storage], address: 10.231.98.41}\n", ""},
		{"storage with another role", "  - {name: storage, roles: [storage, worker], address: 10.231.98.41}\n", "hosts[1].roles[0]: storage takes no other role"},
		{"two storage hosts", "  - {name: s1, roles: [storage], address: 10.231.98.41}\n  - {name: s2, roles: [storage], address: 10.231.98.42}\n", "2 hosts have the storage role"},
		{"an unknown role", "  - {name: s1, roles: [disk], address: 10.231.98.41}\n", `"disk" is not a role (etcd, control-plane, worker, storage)`},
	} {
		_, err := ParseConfig([]byte(head + c.hosts))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
}
