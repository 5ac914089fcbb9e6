package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/flotilla-gitops/flotilla/internal/codec"
)

func newCodecServerCmd(g *globals) *cobra.Command {
	var listen, tokenFile string
	var origins []string
	cmd := &cobra.Command{
		Use:   "codec-server --codec-key-file FILE [--listen HOST:PORT] [--cors-origin URL]... [--auth-token-file FILE]",
		Short: "Serve the payload codec so the Temporal Web UI and `temporal` CLI show encrypted payloads decoded",
		Long: `Serves POST /decode and /encode, as Temporal's Web UI and CLI call a codec server, with the keys of
--codec-key-file. Whoever reaches it reads every payload in clear: it listens on loopback by default, and
on another address only with --auth-token-file, whose token clients send as "Authorization: Bearer TOKEN"
(temporal --codec-auth "Bearer TOKEN"; in the Web UI, an access token passed along).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.conn.CodecKeyFile == "" {
				return fmt.Errorf("codec-server needs --codec-key-file (env %s)", codec.EnvKeyFile)
			}
			c, err := codec.Load(g.conn.CodecKeyFile)
			if err != nil {
				return fmt.Errorf("--codec-key-file: %w", err)
			}
			o := codec.ServerOptions{}
			for _, origin := range origins {
				origin = strings.TrimRight(origin, "/")
				if !strings.HasPrefix(origin, "http://") && !strings.HasPrefix(origin, "https://") {
					return fmt.Errorf("--cors-origin %q: want the Web UI's origin, as http(s)://host[:port]", origin)
				}
				o.CORSOrigins = append(o.CORSOrigins, origin)
			}
			if tokenFile != "" {
				data, err := os.ReadFile(tokenFile)
				if err != nil {
					return fmt.Errorf("--auth-token-file: %w", err)
				}
				if o.AuthToken = strings.TrimSpace(string(data)); o.AuthToken == "" {
					return fmt.Errorf("--auth-token-file %s is empty", tokenFile)
				}
			}
			host, _, err := net.SplitHostPort(listen)
			if err != nil {
				return fmt.Errorf("--listen %q: want HOST:PORT: %w", listen, err)
			}
			if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && host != "localhost" && o.AuthToken == "" {
				return fmt.Errorf("--listen %s is not a loopback address, and anyone reaching it could decrypt every payload: give --auth-token-file too", listen)
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("--listen: %w", err)
			}
			url := "http://" + ln.Addr().String()
			auth := ""
			if o.AuthToken != "" {
				auth = ` --codec-auth "Bearer $(cat ` + tokenFile + `)"`
			}
			fmt.Fprintf(cmd.OutOrStdout(), "codec server on %s with key IDs %s (encrypting with %s)\n"+
				"  temporal CLI: temporal workflow show --workflow-id ID --codec-endpoint %s%s\n"+
				"  Web UI: Settings (or the namespace's codec setting) > Codec Server endpoint %s; give the UI's origin with --cors-origin (now: %s)\n",
				url, strings.Join(c.Keyring().IDs(), ", "), c.Keyring().Active(), url, auth, url, orNone(o.CORSOrigins))
			srv := &http.Server{Handler: codec.Handler(c, o), ReadHeaderTimeout: 10 * time.Second}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() {
				<-ctx.Done()
				shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = srv.Shutdown(shutdown)
			}()
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8081", "host:port to serve on; a non-loopback address needs --auth-token-file")
	cmd.Flags().StringArrayVar(&origins, "cors-origin", nil, "origin of a Temporal Web UI allowed to call from the browser, e.g. http://localhost:8233 (repeatable)")
	cmd.Flags().StringVar(&tokenFile, "auth-token-file", "", `file holding a token every request must carry as "Authorization: Bearer TOKEN"`)
	return cmd
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
