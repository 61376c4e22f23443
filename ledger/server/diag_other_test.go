//go:build !linux

package server

import "net"

func sockState(net.Conn) string { return "kernel queues not shown (linux only)" }
