package local

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/faultline/faultline/lab"
)

// applyAddons creates the lab's addons (the node agents' RBAC and the
// cluster DNS, components.AddonObjects) where they are missing. After a
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
	var creates []struct {
		what   string
		create func(context.Context) error
	}
	add := func(what string, create func(context.Context) error) {
		creates = append(creates, struct {
			what   string
			create func(context.Context) error
		}{what, create})
	}
	opts := metav1.CreateOptions{}
	for _, o := range a.ClusterRoles {
		add("ClusterRole "+o.Name, func(ctx context.Context) error {
			_, err := kc.RbacV1().ClusterRoles().Create(ctx, o, opts)
			return err
		})
	}
	for _, o := range a.ClusterRoleBindings {
		add("ClusterRoleBinding "+o.Name, func(ctx context.Context) error {
			_, err := kc.RbacV1().ClusterRoleBindings().Create(ctx, o, opts)
			return err
		})
	}
	for _, o := range a.ServiceAccounts {
		add("ServiceAccount "+o.Namespace+"/"+o.Name, func(ctx context.Context) error {
			_, err := kc.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, opts)
			return err
		})
	}
	for _, o := range a.ConfigMaps {
		add("ConfigMap "+o.Namespace+"/"+o.Name, func(ctx context.Context) error {
			_, err := kc.CoreV1().ConfigMaps(o.Namespace).Create(ctx, o, opts)
			return err
		})
	}
	for _, o := range a.Services {
		add("Service "+o.Namespace+"/"+o.Name, func(ctx context.Context) error {
			_, err := kc.CoreV1().Services(o.Namespace).Create(ctx, o, opts)
			return err
		})
	}
	for _, o := range a.Deployments {
		add("Deployment "+o.Namespace+"/"+o.Name, func(ctx context.Context) error {
			_, err := kc.AppsV1().Deployments(o.Namespace).Create(ctx, o, opts)
			return err
		})
	}
	for _, c := range creates {
		// The API servers have just started: a request may time out, and
		// kube-system may not exist yet.
		if err := lab.WaitFor(ctx, "creating "+c.what, time.Minute, time.Second, func(ctx context.Context) (bool, error) {
			err := c.create(ctx)
			if err == nil || apierrors.IsAlreadyExists(err) {
				return true, nil
			}
			return false, err
		}); err != nil {
			return fmt.Errorf("lab addons: %w", err)
		}
	}
	return nil
}
