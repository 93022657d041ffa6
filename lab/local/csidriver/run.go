package csidriver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// stopGrace bounds how long a stopping server waits for calls under way.
const stopGrace = 5 * time.Second

// NodeConfig is what the node program runs with.
type NodeConfig struct {
	// NodeID is the node's name, as its kubelet registers it.
	NodeID string
	// Export is the storage host's export path as this node reaches it.
	Export string
	// KubeletRoot is the kubelet's --root-dir: the CSI sockets go under
	// <root>/plugins/<driver>/, the registration sockets in
	// <root>/plugins_registry/.
	KubeletRoot string
	// Kinds are the drivers to serve (default both).
	Kinds []Kind
	// HealthAddress, when set, serves GET /healthz there: 200 once the
	// kubelet registered every driver.
	HealthAddress string
	Log           *slog.Logger
}

// ControllerConfig is what the controller program runs with.
type ControllerConfig struct {
	// Export is the storage host's export path.
	Export string
	// SocketDir holds each driver's controller socket,
	// <dir>/<driver>/controller.sock (ControllerSocket), which the
	// external-attacher dials for the block driver.
	SocketDir string
	// Kubeconfig is the controller's identity for provisioning. Empty
	// with Provision off serves the CSI sockets only.
	Kubeconfig string
	// Provision runs the provisioners of the drivers' StorageClasses.
	Provision bool
	Kinds     []Kind
	// Mkfs is mkfs.ext4 (default: on PATH).
	Mkfs          string
	HealthAddress string
	Log           *slog.Logger
}

// ControllerSocket is where a driver's controller socket goes.
func ControllerSocket(socketDir, driver string) string {
	return filepath.Join(socketDir, driver, "controller.sock")
}

type served struct {
	srv *grpc.Server
	l   net.Listener
}

// group runs servers until ctx ends and stops them in reverse order of
// start, so registration sockets (started last) go first and the kubelet
// deregisters the driver before its endpoint closes.
type group struct {
	mu      sync.Mutex
	servers []served
	wg      sync.WaitGroup
	errs    chan error
}

func newGroup() *group { return &group{errs: make(chan error, 16)} }

func (g *group) start(srv *grpc.Server, l net.Listener) {
	g.mu.Lock()
	g.servers = append(g.servers, served{srv, l})
	g.mu.Unlock()
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := srv.Serve(l); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			g.errs <- fmt.Errorf("serving %s: %w", l.Addr(), err)
		}
	}()
}

func (g *group) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := len(g.servers) - 1; i >= 0; i-- {
		s := g.servers[i]
		done := make(chan struct{})
		go func() { s.srv.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-time.After(stopGrace):
			s.srv.Stop()
		}
	}
	g.wg.Wait()
}

func (g *group) wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		g.stop()
		return nil
	case err := <-g.errs:
		g.stop()
		return err
	}
}

func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l
}

// RunNode serves the node drivers and their registration with the kubelet
// until ctx ends.
func RunNode(ctx context.Context, cfg NodeConfig) error {
	log := logger(cfg.Log)
	if err := CheckNodeID(cfg.NodeID); err != nil {
		return fmt.Errorf("--node-id: %w", err)
	}
	if cfg.Export == "" {
		return errors.New("--export: the storage host's export path is not given")
	}
	if cfg.KubeletRoot == "" || !filepath.IsAbs(cfg.KubeletRoot) {
		return fmt.Errorf("--kubelet-root: want the kubelet's --root-dir as an absolute path, got %q", cfg.KubeletRoot)
	}
	kinds := cfg.Kinds
	if len(kinds) == 0 {
		kinds = Kinds
	}
	st := Store{Root: cfg.Export}
	registry := RegistryDir(cfg.KubeletRoot)
	// Every socket path is checked before anything listens, so a path too
	// long for a socket address is named before the first is made.
	for _, k := range kinds {
		for _, p := range []string{NodeSocket(cfg.KubeletRoot, k.DriverName()), RegistrationSocket(registry, k.DriverName())} {
			if len(p) > MaxSocketPath {
				return fmt.Errorf("socket %s: %d bytes, more than a unix socket address holds (%d); use a shorter kubelet root", p, len(p), MaxSocketPath)
			}
		}
	}
	g := newGroup()
	var regs []*Registration
	for _, k := range kinds {
		node, err := NewNode(k, st, cfg.NodeID, NodeOptions{MountRoot: cfg.KubeletRoot})
		if err != nil {
			g.stop()
			return err
		}
		sock := NodeSocket(cfg.KubeletRoot, k.DriverName())
		l, err := Listen(sock)
		if err != nil {
			g.stop()
			return err
		}
		srv := NewServer(log, k.DriverName()+" node")
		csi.RegisterIdentityServer(srv, NewIdentity(k, st, false))
		csi.RegisterNodeServer(srv, node)
		g.start(srv, l)
		log.Info("serving the node driver", "driver", k.DriverName(), "node", cfg.NodeID, "socket", sock)
	}
	// The registration sockets come last: the kubelet calls the driver
	// as soon as it finds one.
	for _, k := range kinds {
		reg, err := NewRegistration(k.DriverName(), NodeSocket(cfg.KubeletRoot, k.DriverName()), log)
		if err != nil {
			g.stop()
			return err
		}
		sock := RegistrationSocket(registry, k.DriverName())
		l, err := Listen(sock)
		if err != nil {
			g.stop()
			return err
		}
		srv := NewServer(log, k.DriverName()+" registration")
		registerapi.RegisterRegistrationServer(srv, reg)
		g.start(srv, l)
		regs = append(regs, reg)
		log.Info("waiting for the kubelet to register the driver", "driver", k.DriverName(), "socket", sock)
	}
	if cfg.HealthAddress != "" {
		stopHealth, err := serveHealth(cfg.HealthAddress, log, func() error {
			var errs []string
			for _, r := range regs {
				if err := r.Status(); err != nil {
					errs = append(errs, err.Error())
				}
			}
			if err := st.Check(); err != nil {
				errs = append(errs, err.Error())
			}
			if len(errs) > 0 {
				return errors.New(strings.Join(errs, "; "))
			}
			return nil
		})
		if err != nil {
			g.stop()
			return err
		}
		defer stopHealth()
	}
	return g.wait(ctx)
}

// RunController serves the controller drivers and, with Provision, their
// provisioners until ctx ends.
func RunController(ctx context.Context, cfg ControllerConfig) error {
	log := logger(cfg.Log)
	if cfg.Export == "" {
		return errors.New("--export: the export path is not given")
	}
	if cfg.SocketDir == "" || !filepath.IsAbs(cfg.SocketDir) {
		return fmt.Errorf("--socket-dir: want an absolute directory, got %q", cfg.SocketDir)
	}
	var client kubernetes.Interface
	if cfg.Provision {
		if cfg.Kubeconfig == "" {
			return errors.New("--kubeconfig: provisioning needs the controller's kubeconfig (or turn it off with --provision=false)")
		}
		rc, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
		if err != nil {
			return fmt.Errorf("--kubeconfig %s: %w", cfg.Kubeconfig, err)
		}
		rc.UserAgent = "faultline-csi-controller"
		client, err = kubernetes.NewForConfig(rc)
		if err != nil {
			return fmt.Errorf("--kubeconfig %s: %w", cfg.Kubeconfig, err)
		}
	}
	kinds := cfg.Kinds
	if len(kinds) == 0 {
		kinds = Kinds
	}
	st := Store{Root: cfg.Export}
	g := newGroup()
	ctrls := map[Kind]*Controller{}
	for _, k := range kinds {
		ctrl, err := NewController(k, st, ControllerOptions{Mkfs: cfg.Mkfs})
		if err != nil {
			g.stop()
			return err
		}
		ctrls[k] = ctrl
		sock := ControllerSocket(cfg.SocketDir, k.DriverName())
		l, err := Listen(sock)
		if err != nil {
			g.stop()
			return err
		}
		srv := NewServer(log, k.DriverName()+" controller")
		csi.RegisterIdentityServer(srv, NewIdentity(k, st, true))
		csi.RegisterControllerServer(srv, ctrl)
		g.start(srv, l)
		log.Info("serving the controller driver", "driver", k.DriverName(), "socket", sock)
	}
	var pwg sync.WaitGroup
	pctx, stopProvisioners := context.WithCancel(ctx)
	defer func() { stopProvisioners(); pwg.Wait() }()
	if client != nil {
		for _, k := range kinds {
			pc := NewProvisionController(pctx, client, k, NewProvisioner(k, ctrls[k]))
			pwg.Add(1)
			go func() { defer pwg.Done(); pc.Run(pctx) }()
			log.Info("provisioning the driver's claims", "provisioner", ProvisionerName(k))
		}
	}
	if cfg.HealthAddress != "" {
		stopHealth, err := serveHealth(cfg.HealthAddress, log, st.Check)
		if err != nil {
			g.stop()
			return err
		}
		defer stopHealth()
	}
	return g.wait(ctx)
}

// serveHealth serves GET /healthz at addr: 200 "ok" while check passes,
// 503 with its error otherwise.
func serveHealth(addr string, log *slog.Logger, check func() error) (func(), error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--health-address %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := check(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("health server", "address", addr, "error", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
