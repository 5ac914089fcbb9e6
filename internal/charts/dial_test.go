package charts

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/tests/testsrv/testchart"
)

// A chart URL, an index's archive URL or a redirect to a loopback, private or link-local address is not
// dialled unless an operator allows its network: the worker is not a probe into the networks it sits in.
func TestAChartSourceCannotMakeTheWorkerDialARestrictedAddress(t *testing.T) {
	inside := startSpy(t) // on loopback: the worker's own host, as a metadata service or an admin port would be
	inside.publish(t, testchart.New("web", "1.0.0"))
	ctx := context.Background()

	f := &Fetcher{Dir: t.TempDir()}
	_, err := f.Resolve(ctx, Source{Repo: inside.URL, Chart: "web"}, nil, ResolveOptions{})
	require.ErrorIs(t, err, ErrRestrictedAddress)
	require.ErrorContains(t, err, "127.0.0.1 is a loopback address, which the worker reaches for charts only in the networks an operator allows (flotilla-worker --allow-chart-networks 127.0.0.0/8)")
	require.Equal(t, 0, inside.requests(), "not one connection")

	// A redirect is checked as well: an allowed host that sends the worker elsewhere does not take it there.
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	}))
	t.Cleanup(redirector.Close)
	redirectorAddr := netip.MustParseAddrPort(redirector.Listener.Addr().String()).Addr()
	onlyRedirector := &Fetcher{Dir: t.TempDir(), AllowNetworks: []netip.Prefix{netip.PrefixFrom(redirectorAddr, 32)}}
	_, err = onlyRedirector.Resolve(ctx, Source{Chart: redirector.URL + "/web-1.0.0.tgz"}, nil, ResolveOptions{})
	require.ErrorIs(t, err, ErrRestrictedAddress)
	require.ErrorContains(t, err, "169.254.169.254 is a link-local address")

	allowed := &Fetcher{Dir: t.TempDir(), AllowNetworks: loopback}
	_, err = allowed.Resolve(ctx, Source{Repo: inside.URL, Chart: "web"}, nil, ResolveOptions{})
	require.NoError(t, err)
}

func TestRestrictedAddresses(t *testing.T) {
	for ip, why := range map[string]string{
		"127.0.0.1": "loopback", "::1": "loopback", "10.1.2.3": "private", "172.20.0.1": "private", "192.168.1.1": "private",
		"100.64.0.1": "private", "fd00::1": "private", "169.254.169.254": "link-local", "fe80::1": "link-local",
		"::ffff:10.0.0.1": "private", "0.0.0.0": "not a unicast", "8.8.8.8": "", "2001:4860:4860::8888": "",
	} {
		require.Equal(t, why, restricted(netip.MustParseAddr(ip)), ip)
	}
	nets, err := ParseNetworks("10.0.0.0/8, 192.168.7.1 ::1/128")
	require.NoError(t, err)
	require.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.7.1/32"), netip.MustParsePrefix("::1/128")}, nets)
	_, err = ParseNetworks("10.0.0.0/33")
	require.ErrorContains(t, err, `"10.0.0.0/33" is not a network`)
}
