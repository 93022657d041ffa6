package local

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/faultline/faultline/lab"
)

// addonStep is one object of the addons: how to see it is there and how
// to create it.
type addonStep struct {
	what        string
	get, create func(context.Context) error
}

// getCreater is what every typed client of client-go offers for a kind.
type getCreater[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*T, error)
	Create(ctx context.Context, obj *T, opts metav1.CreateOptions) (*T, error)
}

// stepOf is the addon step of obj (a kind, its metadata) through its
// typed client.
func stepOf[T any](kind string, obj *T, meta *metav1.ObjectMeta, c getCreater[T]) addonStep {
	what := kind + " " + meta.Name
	if meta.Namespace != "" {
		what = kind + " " + meta.Namespace + "/" + meta.Name
	}
	return addonStep{
		what:   what,
		get:    func(ctx context.Context) error { _, err := c.Get(ctx, meta.Name, metav1.GetOptions{}); return err },
		create: func(ctx context.Context) error { _, err := c.Create(ctx, obj, metav1.CreateOptions{}); return err },
	}
}

// applyAddons creates the lab's addons (the node agents' RBAC, their
// DaemonSets where they run as pods, and the cluster DNS,
// components.AddonObjects and AgentPodAddons) where they are missing. After a
// reset they are all there, restored with etcd's data; only lab up
// creates them.
func (l *Lab) applyAddons(ctx context.Context) error {
	image, err := l.comp.CoreDNSImage()
	if err != nil {
		return err
	}
	kc, err := l.kubeClient("")
	if err != nil {
		return err
	}
	a := l.comp.AddonObjects(image)
	if l.comp.AgentsAsPods() {
		images, err := l.comp.AgentImages()
		if err != nil {
			return err
		}
		env, err := l.comp.Env(ctx)
		if err != nil {
			return err
		}
		if err := l.comp.AgentPodAddons(&a, images, env.Profile.ClientEnv()); err != nil {
			return err
		}
	}
	var steps []addonStep
	for _, o := range a.ClusterRoles {
		steps = append(steps, stepOf("ClusterRole", o, &o.ObjectMeta, kc.RbacV1().ClusterRoles()))
	}
	for _, o := range a.ClusterRoleBindings {
		steps = append(steps, stepOf("ClusterRoleBinding", o, &o.ObjectMeta, kc.RbacV1().ClusterRoleBindings()))
	}
	for _, o := range a.Roles {
		steps = append(steps, stepOf("Role", o, &o.ObjectMeta, kc.RbacV1().Roles(o.Namespace)))
	}
	for _, o := range a.RoleBindings {
		steps = append(steps, stepOf("RoleBinding", o, &o.ObjectMeta, kc.RbacV1().RoleBindings(o.Namespace)))
	}
	for _, o := range a.ServiceAccounts {
		steps = append(steps, stepOf("ServiceAccount", o, &o.ObjectMeta, kc.CoreV1().ServiceAccounts(o.Namespace)))
	}
	for _, o := range a.ConfigMaps {
		steps = append(steps, stepOf("ConfigMap", o, &o.ObjectMeta, kc.CoreV1().ConfigMaps(o.Namespace)))
	}
	for _, o := range a.Services {
		steps = append(steps, stepOf("Service", o, &o.ObjectMeta, kc.CoreV1().Services(o.Namespace)))
	}
	for _, o := range a.Deployments {
		steps = append(steps, stepOf("Deployment", o, &o.ObjectMeta, kc.AppsV1().Deployments(o.Namespace)))
	}
	for _, o := range a.DaemonSets {
		steps = append(steps, stepOf("DaemonSet", o, &o.ObjectMeta, kc.AppsV1().DaemonSets(o.Namespace)))
	}
	for _, o := range a.CSIDrivers {
		steps = append(steps, stepOf("CSIDriver", o, &o.ObjectMeta, kc.StorageV1().CSIDrivers()))
	}
	for _, o := range a.StorageClasses {
		steps = append(steps, stepOf("StorageClass", o, &o.ObjectMeta, kc.StorageV1().StorageClasses()))
	}
	for _, st := range steps {
		// The API servers have just started: a request may time out, and
		// kube-system may not exist yet. An object that is there is left
		// as it is (creating a Service again would fail on its address
		// before it failed on its name).
		if err := lab.WaitFor(ctx, "creating "+st.what, time.Minute, time.Second, func(ctx context.Context) (bool, error) {
			err := st.get(ctx)
			if err == nil {
				return true, nil
			}
			if !apierrors.IsNotFound(err) {
				return false, err
			}
			err = st.create(ctx)
			return err == nil || apierrors.IsAlreadyExists(err), err
		}); err != nil {
			return fmt.Errorf("lab addons: %w", err)
		}
	}
	return nil
}
