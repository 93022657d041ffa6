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

func TestStorageSection(t *testing.T) {
	const head = "name: s\nkind: beta\nnetwork: {management: 10.231.98.0/24}\nhosts:\n  - {name: cp1, roles: [etcd, control-plane, worker], address: 10.231.98.11}\n  - {name: store, roles: [storage], address: 10.231.98.41}\n"
	for _, c := range []struct{ name, storage, want string }{
		{"a store that runs", "storage: {sharedClass: nfs, history: {endpoints: [\"http://10.231.98.41:2379\"]}}\n", ""},
		{"a store faultline runs", "storage: {blockClass: b, history: {host: store, etcd: /usr/local/bin/etcd}}\n", ""},
		{"no class", "storage: {history: {endpoints: [\"http://x:2379\"]}}\n", "storage.sharedClass: at least one StorageClass is required"},
		{"no store", "storage: {sharedClass: nfs}\n", "storage.history: is required"},
		{"both stores", "storage: {sharedClass: nfs, history: {endpoints: [\"http://x:2379\"], host: store, etcd: /e}}\n", "names both endpoints and a host"},
		{"no URL", "storage: {sharedClass: nfs, history: {endpoints: [\"x:2379\"]}}\n", `storage.history.endpoints[0]: "x:2379" is not an etcd client URL`},
		{"a store on a cluster host", "storage: {sharedClass: nfs, history: {host: cp1, etcd: /e}}\n", "cp1 does not have the storage role alone"},
		{"an unknown host", "storage: {sharedClass: nfs, history: {host: nope, etcd: /e}}\n", `"nope" is not a host of the lab`},
		{"a relative etcd", "storage: {sharedClass: nfs, history: {host: store, etcd: etcd}}\n", `storage.history.etcd: "etcd" is not an absolute path`},
		{"store settings without its host", "storage: {sharedClass: nfs, history: {endpoints: [\"http://x:2379\"], port: 2400}}\n", "are for a store faultline runs"},
		{"an unknown field", "storage: {sharedClass: nfs, nfsServer: x, history: {endpoints: [\"http://x:2379\"]}}\n", "nfsServer"},
	} {
		cfg, err := ParseConfig([]byte(head + c.storage))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		case c.want == "" && c.name == "a store faultline runs":
			h := cfg.Storage.History
			if h.Port != 2379 || h.DataDir != "/var/lib/faultline-history" || cfg.Storage.ReaderImage != DefaultReaderImage {
				t.Errorf("defaults: %+v, reader image %q", h, cfg.Storage.ReaderImage)
			}
		}
	}
}

func TestEtcdSection(t *testing.T) {
	const head = "name: s\nkind: beta\nnetwork: {management: 10.231.98.0/24}\nhosts:\n  - {name: e1, roles: [etcd, control-plane], address: 10.231.98.11}\n  - {name: e2, roles: [etcd], address: 10.231.98.12}\n"
	for _, c := range []struct{ name, etcd, want string }{
		{"one endpoint per member", "etcd: {endpoints: [\"https://10.231.98.11:2379\", \"https://10.231.98.12:2379\"], caFile: ca, certFile: c, keyFile: k}\n", ""},
		{"a member short", "etcd: {endpoints: [\"https://10.231.98.11:2379\"], caFile: ca, certFile: c, keyFile: k}\n", "etcd.endpoints: 1 endpoints for 2 hosts with the etcd role"},
		{"plain http", "etcd: {endpoints: [\"http://a:2379\", \"https://b:2379\"], caFile: ca, certFile: c, keyFile: k}\n", `etcd.endpoints[0]: "http://a:2379" is not an https:// client URL`},
		{"no key", "etcd: {endpoints: [\"https://a:2379\", \"https://b:2379\"], caFile: ca, certFile: c}\n", "etcd.keyFile: is required"},
	} {
		_, err := ParseConfig([]byte(head + c.etcd))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
}
