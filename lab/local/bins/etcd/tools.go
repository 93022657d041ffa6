//go:build tools

// Package etcd lists the etcd commands the local lab builds, so that
// go mod tidy keeps every dependency they need in this module's go.sum.
package etcd

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
	_ "go.etcd.io/etcd/server/v3"
)
