package gitserver

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/flotilla-gitops/flotilla/tests/env/gitenv"
)

// SSH serves the repositories of a folder over SSH: git-upload-pack for an exec request of an
// authorized key, nothing else.
type SSH struct {
	// Addr is the server's host:port on loopback.
	Addr string
	// HostKey is the server's generated host key.
	HostKey ssh.PublicKey

	root     string
	execPath string
	config   *ssh.ServerConfig
	ln       net.Listener

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// StartSSH serves the repositories under root on a loopback port to clients holding one of the
// authorized keys (any user name).
func StartSSH(root string, authorized ...ssh.PublicKey) (*SSH, error) {
	execPath, err := gitExecPath()
	if err != nil {
		return nil, err
	}
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	signer, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		return nil, err
	}
	config := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			for _, a := range authorized {
				if sameKey(a, key) {
					return &ssh.Permissions{}, nil
				}
			}
			return nil, errors.New("key not authorized")
		},
	}
	config.AddHostKey(signer)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &SSH{Addr: ln.Addr().String(), HostKey: signer.PublicKey(), root: root, execPath: execPath, config: config, ln: ln,
		conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// RepoURL is the ssh:// clone URL of the repository folder <root>/<name>, user git.
func (s *SSH) RepoURL(name string) string { return "ssh://git@" + s.Addr + "/" + name }

// KnownHosts is a known_hosts line accepting the server's host key at its address.
func (s *SSH) KnownHosts() []byte {
	return []byte(knownhosts.Line([]string{knownhosts.Normalize(s.Addr)}, s.HostKey) + "\n")
}

// Close stops listening, closes every connection and waits for their sessions to end.
func (s *SSH) Close() error {
	s.mu.Lock()
	s.closed = true
	err := s.ln.Close()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

func (s *SSH) serve() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = nc.Close()
			return
		}
		s.conns[nc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.handle(nc)
			s.mu.Lock()
			delete(s.conns, nc)
			s.mu.Unlock()
		}()
	}
}

func (s *SSH) handle(nc net.Conn) {
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second)) // the handshake; cleared once it is done
	conn, chans, reqs, err := ssh.NewServerConn(nc, s.config)
	if err != nil {
		return
	}
	_ = nc.SetDeadline(time.Time{})
	defer conn.Close()
	go ssh.DiscardRequests(reqs)
	var sessions sync.WaitGroup
	for nch := range chans {
		if nch.ChannelType() != "session" {
			_ = nch.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, requests, err := nch.Accept()
		if err != nil {
			continue
		}
		sessions.Add(1)
		go func() {
			defer sessions.Done()
			s.session(ch, requests)
		}()
	}
	sessions.Wait()
}

// session runs the one command of an exec request, git-upload-pack of a repository under root.
func (s *SSH) session(ch ssh.Channel, requests <-chan *ssh.Request) {
	defer ch.Close()
	for req := range requests {
		if req.Type != "exec" {
			_ = req.Reply(false, nil)
			continue
		}
		var payload struct{ Command string }
		if err := ssh.Unmarshal(req.Payload, &payload); err != nil {
			_ = req.Reply(false, nil)
			return
		}
		path, ok := strings.CutPrefix(payload.Command, "git-upload-pack ")
		if !ok {
			_ = req.Reply(false, nil)
			return
		}
		_ = req.Reply(true, nil)
		code := s.uploadPack(ch, unquote(strings.TrimSpace(path)))
		_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{code}))
		return
	}
}

func (s *SSH) uploadPack(ch ssh.Channel, path string) uint32 {
	cmd := exec.Command(filepath.Join(s.execPath, "git-upload-pack"), repoPath(s.root, path))
	cmd.Env = gitenv.Environ(gitEnv...)
	cmd.Stdout, cmd.Stderr = ch, ch.Stderr()
	// The client's side is copied by hand: exec.Cmd would wait for it to end, and a client that read what
	// it wanted may keep it open.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 1
	}
	if err := cmd.Start(); err != nil {
		return 1
	}
	go func() {
		_, _ = io.Copy(stdin, ch)
		_ = stdin.Close()
	}()
	if err := cmd.Wait(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return uint32(exit.ExitCode())
		}
		return 1
	}
	return 0
}
