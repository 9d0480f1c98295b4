//go:build tools

// Package tools pins etcd's server command in go.mod (go build reads it from there).
package tools

import _ "go.etcd.io/etcd/server/v3"
