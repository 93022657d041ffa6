// Command faultline-csi runs the local lab's CSI drivers
// (directory.csi.faultline.local and block.csi.faultline.local, see
// lab/local/csidriver): `faultline-csi node` on every node, beside its
// kubelet, and `faultline-csi controller` on the storage host.
// lab/local/csidriver/README.md says how a lab runs them.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/faultline/faultline/lab/local/csidriver"
)

func main() {
	if err := newRoot().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "faultline-csi:", err)
		os.Exit(1)
	}
}

type common struct {
	export   string
	drivers  string
	health   string
	logLevel string
}

func (c *common) bind(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&c.export, "export", "", "the storage host's export path, as this host reaches it (required)")
	f.StringVar(&c.drivers, "drivers", "directory,block", "the volume kinds to serve, comma-separated: directory, block")
	f.StringVar(&c.health, "health-address", "", "serve GET /healthz at this address (host:port); empty: none")
	f.StringVar(&c.logLevel, "log-level", "info", "debug, info, warn or error (debug logs every call)")
}

func (c *common) setup() (*slog.Logger, []csidriver.Kind, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", c.logLevel)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	// client-go and the provisioner library log through klog.
	klog.SetSlogLogger(log)
	kinds, err := csidriver.ParseKinds(c.drivers)
	if err != nil {
		return nil, nil, fmt.Errorf("--drivers: %w", err)
	}
	if c.export == "" {
		return nil, nil, fmt.Errorf("--export: the export path is required")
	}
	return log, kinds, nil
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "faultline-csi",
		Short: "the local lab's CSI drivers: shared directories and block images with a loop device per node",
		Long: `faultline-csi serves two CSI drivers:

  ` + csidriver.DirectoryDriverName + `  a shared directory under the export path (attachRequired: false)
  ` + csidriver.BlockDriverName + `      an ext4 image, a loop device and mount per node (attachRequired: true)

Run "faultline-csi node" on every node beside its kubelet (it registers with
the kubelet's plugin watcher) and "faultline-csi controller" where the export
path is (it serves CreateVolume, DeleteVolume and ControllerPublishVolume, and
provisions the drivers' StorageClasses). The block driver's VolumeAttachments
are handled by kubernetes-csi's csi-attacher on the controller socket.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(nodeCmd(), controllerCmd())
	return root
}

func nodeCmd() *cobra.Command {
	var c common
	var nodeID, kubeletRoot string
	cmd := &cobra.Command{
		Use:   "node",
		Short: "serve the node drivers and register them with this node's kubelet",
		Long: `Serve the node drivers of this node: for each driver a CSI socket at
<kubelet-root>/plugins/<driver>/csi.sock and a registration socket at
<kubelet-root>/plugins_registry/<driver>.sock, which the kubelet's plugin
watcher finds. The node is recorded under <export>/nodes/, which is how the
controller knows it exists.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, kinds, err := c.setup()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return csidriver.RunNode(ctx, csidriver.NodeConfig{
				NodeID: nodeID, Export: c.export, KubeletRoot: kubeletRoot, Kinds: kinds,
				HealthAddress: c.health, Log: log,
			})
		},
	}
	c.bind(cmd)
	cmd.Flags().StringVar(&nodeID, "node-id", "", "this node's name, as its kubelet registers the Node (required)")
	cmd.Flags().StringVar(&kubeletRoot, "kubelet-root", "", "the kubelet's --root-dir (required)")
	return cmd
}

func controllerCmd() *cobra.Command {
	var c common
	var socketDir, kubeconfig, mkfs string
	var provision bool
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "serve the controller drivers and provision their StorageClasses",
		Long: `Serve the controller drivers where the export path is: for each driver a
CSI socket at <socket-dir>/<driver>/controller.sock (csi-attacher's
--csi-address for the block driver) and, with --provision, a provisioner for
the StorageClasses whose provisioner is the driver's name.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, kinds, err := c.setup()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return csidriver.RunController(ctx, csidriver.ControllerConfig{
				Export: c.export, SocketDir: socketDir, Kubeconfig: kubeconfig, Provision: provision,
				Kinds: kinds, Mkfs: mkfs, HealthAddress: c.health, Log: log,
			})
		},
	}
	c.bind(cmd)
	f := cmd.Flags()
	f.StringVar(&socketDir, "socket-dir", "", "where the controller sockets go, <dir>/<driver>/controller.sock (required)")
	f.StringVar(&kubeconfig, "kubeconfig", "", "the controller's kubeconfig, for provisioning")
	f.BoolVar(&provision, "provision", true, "provision the drivers' StorageClasses (needs --kubeconfig)")
	f.StringVar(&mkfs, "mkfs", "mkfs.ext4", "mkfs.ext4 to make block volumes' file systems with")
	cmd.Flags().SortFlags = false
	return cmd
}
