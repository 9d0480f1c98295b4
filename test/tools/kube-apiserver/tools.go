//go:build tools

// Package tools pins the kube-apiserver command in go.mod (go build reads it from there).
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
