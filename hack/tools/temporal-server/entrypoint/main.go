// Command temporal-entrypoint starts temporal-server the way the official image's entrypoint script does,
// in an image that has no shell: it binds the server to the container's own address, found from its
// hostname, unless BIND_ON_IP says otherwise, and announces that address to the other services.
package main

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

func main() {
	if os.Getenv("BIND_ON_IP") == "" {
		ip, err := ownAddress()
		if err != nil {
			fmt.Fprintln(os.Stderr, "temporal-entrypoint:", err)
			os.Exit(1)
		}
		_ = os.Setenv("BIND_ON_IP", ip)
	}
	if ip := os.Getenv("BIND_ON_IP"); (ip == "0.0.0.0" || ip == "::0") && os.Getenv("TEMPORAL_BROADCAST_ADDRESS") == "" {
		if own, err := ownAddress(); err == nil {
			_ = os.Setenv("TEMPORAL_BROADCAST_ADDRESS", own)
		}
	}
	args := append([]string{"temporal-server", "start"}, os.Args[1:]...)
	err := syscall.Exec("/usr/local/bin/temporal-server", args, os.Environ())
	fmt.Fprintln(os.Stderr, "temporal-entrypoint: exec temporal-server:", err)
	os.Exit(1)
}

// ownAddress is the first address the container's hostname resolves to (docker writes it into /etc/hosts).
func ownAddress() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", err
	}
	addrs, err := net.LookupHost(host)
	if err != nil {
		return "", fmt.Errorf("resolve own hostname %q: %w", host, err)
	}
	if len(addrs) == 0 {
		return "", fmt.Errorf("own hostname %q resolves to no address", host)
	}
	return addrs[0], nil
}
