// Package cleanup returns a cluster that has no snapshot to revert to to a
// clean start: it deletes what faultline created and waits until the
// cluster is healthy again. State from earlier runs can survive it, which
// is why labs that reset this way say lab.ResetCleanup in their Info.
package cleanup

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/lab"
)

// OwnedLabel marks every namespace faultline creates (value "true"); only
// namespaces carrying it are deleted.
const OwnedLabel = "faultline.dev/owned"

// OwnedSelector selects faultline's namespaces.
const OwnedSelector = OwnedLabel + "=true"

// DefaultTimeout bounds a reset when the caller gives none.
const DefaultTimeout = 10 * time.Minute

// Reset deletes faultline's namespaces and waits for a clean start.
func Reset(ctx context.Context, kube kubernetes.Interface, timeout time.Duration) error {
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	namespaces, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: OwnedSelector})
	if err != nil {
		return fmt.Errorf("listing faultline's namespaces: %w", err)
	}
	for _, ns := range namespaces.Items {
		if ns.DeletionTimestamp != nil {
			continue
		}
		err := kube.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting namespace %s: %w", ns.Name, err)
		}
	}
	return lab.WaitFor(ctx, "a clean start (every node Ready, faultline's namespaces gone)", timeout, 2*time.Second,
		func(ctx context.Context) (bool, error) {
			problems, err := Problems(ctx, kube)
			if err != nil {
				return false, err
			}
			if len(problems) > 0 {
				return false, fmt.Errorf("not clean yet: %s", strings.Join(problems, "; "))
			}
			return true, nil
		})
}

// Problems lists what stands between the cluster and a clean start: nodes
// not Ready, faultline namespaces still present, pods in them terminating.
// An empty list means clean.
func Problems(ctx context.Context, kube kubernetes.Interface) ([]string, error) {
	var problems []string
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	if len(nodes.Items) == 0 {
		problems = append(problems, "the cluster has no nodes")
	}
	for _, n := range nodes.Items {
		if !nodeReady(&n) {
			problems = append(problems, fmt.Sprintf("node %s is not Ready", n.Name))
		}
	}
	namespaces, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: OwnedSelector})
	if err != nil {
		return nil, fmt.Errorf("listing faultline's namespaces: %w", err)
	}
	for _, ns := range namespaces.Items {
		pods, err := kube.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing pods in %s: %w", ns.Name, err)
		}
		var terminating []string
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				terminating = append(terminating, p.Name)
			}
		}
		sort.Strings(terminating)
		switch {
		case len(terminating) > 0:
			problems = append(problems, fmt.Sprintf("namespace %s has terminating pods %s", ns.Name, strings.Join(terminating, ",")))
		default:
			problems = append(problems, fmt.Sprintf("namespace %s still exists (%s)", ns.Name, ns.Status.Phase))
		}
	}
	return problems, nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
