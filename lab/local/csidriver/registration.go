package csidriver

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"

	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// Registration is the kubelet plugin watcher's registration service for
// one driver on one node, what node-driver-registrar would serve: the
// kubelet finds its socket in <root-dir>/plugins_registry, asks GetInfo,
// checks the versions, calls NodeGetInfo on the driver's endpoint
// (writing the node's CSINode entry), and reports the outcome with
// NotifyRegistrationStatus.
type Registration struct {
	registerapi.UnimplementedRegistrationServer
	driver   string
	endpoint string
	log      *slog.Logger

	mu         sync.Mutex
	notified   bool
	registered bool
	reason     string
}

// SupportedVersions are the CSI versions the driver tells the kubelet it
// speaks (the kubelet accepts 1.x).
var SupportedVersions = []string{"1.0.0"}

// NewRegistration serves the registration of driver, whose CSI socket is
// endpoint (an absolute path, which the kubelet dials).
func NewRegistration(driver, endpoint string, log *slog.Logger) (*Registration, error) {
	if !filepath.IsAbs(endpoint) {
		return nil, fmt.Errorf("registration of %s: the endpoint %q is not an absolute path", driver, endpoint)
	}
	return &Registration{driver: driver, endpoint: endpoint, log: log}, nil
}

func (r *Registration) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              r.driver,
		Endpoint:          r.endpoint,
		SupportedVersions: SupportedVersions,
	}, nil
}

func (r *Registration) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	r.mu.Lock()
	r.notified, r.registered, r.reason = true, s.PluginRegistered, s.Error
	r.mu.Unlock()
	if s.PluginRegistered {
		r.log.Info("the kubelet registered the driver", "driver", r.driver, "endpoint", r.endpoint)
	} else {
		r.log.Error("the kubelet refused the driver", "driver", r.driver, "error", s.Error)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

// Status says whether the kubelet has registered the driver, and if not,
// why.
func (r *Registration) Status() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case !r.notified:
		return fmt.Errorf("%s: the kubelet has not registered it yet", r.driver)
	case !r.registered:
		return fmt.Errorf("%s: the kubelet refused it: %s", r.driver, r.reason)
	}
	return nil
}

// RegistryDir is a kubelet's plugin registry directory, which it watches
// for plugins' registration sockets.
func RegistryDir(kubeletRoot string) string { return filepath.Join(kubeletRoot, "plugins_registry") }

// RegistrationSocket is where driver's registration socket goes in a
// kubelet's plugin registry directory (<root-dir>/plugins_registry). The
// kubelet takes any socket there; the name is short because a socket
// path holds at most 107 bytes and kubelet roots are deep on the local
// lab.
func RegistrationSocket(registryDir, driver string) string {
	return filepath.Join(registryDir, driver+".sock")
}

// NodeSocket is where driver's CSI socket goes under a kubelet's root
// directory (<root-dir>/plugins/<driver>/csi.sock, where
// node-driver-registrar deployments put it).
func NodeSocket(kubeletRoot, driver string) string {
	return filepath.Join(kubeletRoot, "plugins", driver, "csi.sock")
}
