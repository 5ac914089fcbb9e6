//go:build tools

// Package tools pins the Kubernetes control-plane commands that the local clusters run, and kubectl, with
// which the front door's tests drive a management cluster.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
