// Package guard keeps destructive scenarios away from clusters that are not
// disposable labs.
//
// Two things must both hold before anything is touched: the lab file says
// `lab: true`, and the cluster its kubeconfig reaches carries faultline's
// marker naming that lab — a ConfigMap kube-system/faultline-lab-marker
// with data lab=<lab name>. The local lab places the marker when it comes
// up. A user marks their own disposable cluster once, by hand:
//
//	kubectl -n kube-system create configmap faultline-lab-marker --from-literal=lab=<lab name>
//
// or with PlaceMarker (as `faultline lab mark` does).
package guard

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/faultline/faultline/lab"
)

// The marker object.
const (
	MarkerNamespace = "kube-system"
	MarkerName      = "faultline-lab-marker"
	// MarkerKey holds the lab's name in the marker's data.
	MarkerKey = "lab"
)

// ErrRefused is wrapped by every refusal, as opposed to a failure to check.
var ErrRefused = errors.New("refusing to run destructive scenarios")

// markCommand is the command the refusals suggest.
func markCommand(name string) string {
	return fmt.Sprintf("kubectl -n %s create configmap %s --from-literal=%s=%s", MarkerNamespace, MarkerName, MarkerKey, name)
}

// CheckConfig refuses a lab file that does not say it describes a lab.
// It needs no cluster, so it runs before anything is dialled.
func CheckConfig(c *lab.Config) error {
	if c == nil {
		return fmt.Errorf("%w: no lab config", ErrRefused)
	}
	if !c.Lab {
		where := c.Name
		if c.Path() != "" {
			where = fmt.Sprintf("%s (%s)", c.Name, c.Path())
		}
		return fmt.Errorf("%w against lab %s: the lab file does not say `lab: true`; "+
			"set it only if the cluster is disposable, faults may break it", ErrRefused, where)
	}
	return nil
}

// Check refuses the lab unless its file says `lab: true` and the cluster
// kube reaches carries the marker for this lab.
func Check(ctx context.Context, c *lab.Config, kube kubernetes.Interface) error {
	if err := CheckConfig(c); err != nil {
		return err
	}
	cm, err := kube.CoreV1().ConfigMaps(MarkerNamespace).Get(ctx, MarkerName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%w against lab %s: its cluster carries no faultline lab marker (ConfigMap %s/%s); "+
			"if this cluster is that disposable lab, mark it once: %s",
			ErrRefused, c.Name, MarkerNamespace, MarkerName, markCommand(c.Name))
	}
	if err != nil {
		return fmt.Errorf("lab %s: reading the lab marker %s/%s from the cluster: %w", c.Name, MarkerNamespace, MarkerName, err)
	}
	if got := cm.Data[MarkerKey]; got != c.Name {
		return fmt.Errorf("%w against lab %s: the cluster's marker %s/%s says it is lab %q; "+
			"the kubeconfig reaches another lab's cluster", ErrRefused, c.Name, MarkerNamespace, MarkerName, got)
	}
	return nil
}

// CheckKubeconfig is Check against the cluster a kubeconfig file reaches.
func CheckKubeconfig(ctx context.Context, c *lab.Config, kubeconfig string) error {
	if err := CheckConfig(c); err != nil {
		return err
	}
	kube, err := Client(kubeconfig)
	if err != nil {
		return fmt.Errorf("lab %s: %w", c.Name, err)
	}
	return Check(ctx, c, kube)
}

// PlaceMarker marks the cluster kube reaches as lab c. It refuses a config
// without `lab: true` and a cluster already marked for another lab.
func PlaceMarker(ctx context.Context, c *lab.Config, kube kubernetes.Interface) error {
	if err := CheckConfig(c); err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      MarkerName,
			Namespace: MarkerNamespace,
			Labels:    map[string]string{"app.kubernetes.io/managed-by": "faultline"},
		},
		Data: map[string]string{MarkerKey: c.Name},
	}
	_, err := kube.CoreV1().ConfigMaps(MarkerNamespace).Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		existing, getErr := kube.CoreV1().ConfigMaps(MarkerNamespace).Get(ctx, MarkerName, metav1.GetOptions{})
		if getErr != nil {
			return fmt.Errorf("lab %s: reading the existing lab marker: %w", c.Name, getErr)
		}
		if got := existing.Data[MarkerKey]; got != c.Name {
			return fmt.Errorf("lab %s: the cluster is already marked as lab %q; not re-marking it", c.Name, got)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("lab %s: placing the lab marker %s/%s: %w", c.Name, MarkerNamespace, MarkerName, err)
	}
	return nil
}

// ClientOptions tune the client Client builds. The zero value is
// client-go's defaults.
type ClientOptions struct {
	// Timeout bounds each request; zero leaves requests unbounded.
	Timeout time.Duration
	// UserAgent names the client to the API server; empty keeps
	// client-go's default.
	UserAgent string
}

// Client builds a clientset from a kubeconfig file, with at most one
// ClientOptions.
func Client(kubeconfig string, opts ...ClientOptions) (kubernetes.Interface, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
	}
	for _, o := range opts {
		if o.Timeout > 0 {
			rc.Timeout = o.Timeout
		}
		if o.UserAgent != "" {
			rc.UserAgent = o.UserAgent
		}
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("client for kubeconfig %s: %w", kubeconfig, err)
	}
	return kube, nil
}
