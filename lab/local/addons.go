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
	var steps []addonStep
	add := func(what string, get, create func(context.Context) error) {
		steps = append(steps, addonStep{what, get, create})
	}
	get, opts := metav1.GetOptions{}, metav1.CreateOptions{}
	for _, o := range a.ClusterRoles {
		add("ClusterRole "+o.Name,
			func(ctx context.Context) error {
				_, err := kc.RbacV1().ClusterRoles().Get(ctx, o.Name, get)
				return err
			},
			func(ctx context.Context) error { _, err := kc.RbacV1().ClusterRoles().Create(ctx, o, opts); return err })
	}
	for _, o := range a.ClusterRoleBindings {
		add("ClusterRoleBinding "+o.Name,
			func(ctx context.Context) error {
				_, err := kc.RbacV1().ClusterRoleBindings().Get(ctx, o.Name, get)
				return err
			},
			func(ctx context.Context) error {
				_, err := kc.RbacV1().ClusterRoleBindings().Create(ctx, o, opts)
				return err
			})
	}
	for _, o := range a.ServiceAccounts {
		add("ServiceAccount "+o.Namespace+"/"+o.Name,
			func(ctx context.Context) error {
				_, err := kc.CoreV1().ServiceAccounts(o.Namespace).Get(ctx, o.Name, get)
				return err
			},
			func(ctx context.Context) error {
				_, err := kc.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, opts)
				return err
			})
	}
	for _, o := range a.ConfigMaps {
		add("ConfigMap "+o.Namespace+"/"+o.Name,
			func(ctx context.Context) error {
				_, err := kc.CoreV1().ConfigMaps(o.Namespace).Get(ctx, o.Name, get)
				return err
			},
			func(ctx context.Context) error {
				_, err := kc.CoreV1().ConfigMaps(o.Namespace).Create(ctx, o, opts)
				return err
			})
	}
	for _, o := range a.Services {
		add("Service "+o.Namespace+"/"+o.Name,
			func(ctx context.Context) error {
				_, err := kc.CoreV1().Services(o.Namespace).Get(ctx, o.Name, get)
				return err
			},
			func(ctx context.Context) error {
				_, err := kc.CoreV1().Services(o.Namespace).Create(ctx, o, opts)
				return err
			})
	}
	for _, o := range a.Deployments {
		add("Deployment "+o.Namespace+"/"+o.Name,
			func(ctx context.Context) error {
				_, err := kc.AppsV1().Deployments(o.Namespace).Get(ctx, o.Name, get)
				return err
			},
			func(ctx context.Context) error {
				_, err := kc.AppsV1().Deployments(o.Namespace).Create(ctx, o, opts)
				return err
			})
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
