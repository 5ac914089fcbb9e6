package charts

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
)

// A chart source is written by whoever writes a GitRepo's content, and an index.yaml or a redirect by
// whoever runs the repository: either could point the worker at an address only it can reach (a cloud's
// metadata service at 169.254.169.254, an admin port on loopback, a private service) and learn from the
// answer's status or timing what is there. The Fetcher dials public addresses only, unless an operator
// allows a network; the check is made on the address actually dialled, after DNS, so a name that resolves
// to a private address is refused as well.

// cgnat is the shared address space of carrier-grade NAT (RFC 6598), private in all but name.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// restricted reports why ip is not dialled without permission, or "" for a public address.
func restricted(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case ip.IsLoopback():
		return "loopback"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "link-local"
	case ip.IsPrivate(), cgnat.Contains(ip):
		return "private"
	case ip.IsUnspecified(), ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "not a unicast"
	}
	return ""
}

// ErrRestrictedAddress is a dial refused by the Fetcher's network policy.
var ErrRestrictedAddress = errors.New("address not allowed")

// dialControl refuses, before connecting, an address restricted and outside allowed.
func dialControl(allowed []netip.Prefix, everything bool) func(network, address string, _ syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		if everything {
			return nil
		}
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return err
		}
		ip, err := netip.ParseAddr(host)
		if err != nil {
			return err
		}
		why := restricted(ip)
		if why == "" {
			return nil
		}
		for _, p := range allowed {
			if p.Contains(ip.Unmap()) || p.Contains(ip) {
				return nil
			}
		}
		return fmt.Errorf("%w: %s is a %s address, which the worker reaches for charts only in the networks an operator "+
			"allows (flotilla-worker --allow-chart-networks %s)", ErrRestrictedAddress, ip.Unmap(), why, suggestion(ip))
	}
}

// suggestion is the narrowest usual network holding ip, for the message.
func suggestion(ip netip.Addr) string {
	ip = ip.Unmap()
	for _, p := range []string{"127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "100.64.0.0/10"} {
		if pp := netip.MustParsePrefix(p); pp.Contains(ip) {
			return p
		}
	}
	if ip.Is6() {
		return netip.PrefixFrom(ip, 64).Masked().String()
	}
	return ip.String() + "/32"
}

// ParseNetworks reads a list of CIDR networks (comma- or space-separated), as --allow-chart-networks takes
// it; a bare address is its own network.
func ParseNetworks(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		if !strings.Contains(f, "/") {
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("%q is not a network (CIDR, such as 10.0.0.0/8) or an address", f)
			}
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a network (CIDR, such as 10.0.0.0/8)", f)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
