package ssh

import (
	"context"
	"fmt"
	"net"
	"strings"
	"syscall"

	xssh "golang.org/x/crypto/ssh"

	"github.com/faultline/faultline/lab"
)

// Dial opens a connection from the host (see Client.Dial), as the SSH
// user: the lab's sudo does not apply, so a socket only root may open
// needs a root login.
func (h *Host) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	c, err := h.client.Dial(ctx, network, address)
	if err != nil {
		return nil, fmt.Errorf("dialing %s %s from %s: %w", network, address, h.cfg.Name, err)
	}
	return c, nil
}

// refusalErrnos are the messages OpenSSH sends when it could not connect
// a forwarded TCP channel (its strerror), and the errors they stand for.
var refusalErrnos = map[string]syscall.Errno{
	"connection refused":     syscall.ECONNREFUSED,
	"no route to host":       syscall.EHOSTUNREACH,
	"network is unreachable": syscall.ENETUNREACH,
	"connection timed out":   syscall.ETIMEDOUT,
}

// ChannelRefusal is a dial the server refused: the server's reason and
// message (the OpenChannelError, which it wraps) and, where they say, the
// syscall error the server met (which it wraps too); it wraps
// lab.ErrNotConnectedByHost. Its message names
// neither the network nor the address: the dial's caller does.
type ChannelRefusal struct {
	Err *xssh.OpenChannelError
	// Errno is what the refusal stands for; 0 when it does not say.
	Errno syscall.Errno
}

func (r *ChannelRefusal) Error() string {
	msg := r.Err.Error()
	if r.Errno != 0 && !strings.Contains(strings.ToLower(msg), r.Errno.Error()) {
		msg += " (" + r.Errno.Error() + ")"
	}
	return msg
}

func (r *ChannelRefusal) Unwrap() []error {
	if r.Errno == 0 {
		return []error{r.Err, lab.ErrNotConnectedByHost}
	}
	return []error{r.Err, r.Errno, lab.ErrNotConnectedByHost}
}

// channelRefusal names what a refused channel stands for. OpenSSH sends
// strerror for a TCP connection it could not make; for a unix socket it
// sends only "open failed", whether the socket is absent, nobody listens
// on it, the SSH user may not open it or the server forbids forwarding it
// (AllowStreamLocalForwarding no): a refused connection in every case, the
// server's words kept in the message.
func channelRefusal(network string, err *xssh.OpenChannelError) error {
	r := &ChannelRefusal{Err: err}
	if err.Reason == xssh.ConnectionFailed {
		if network == "unix" {
			r.Errno = syscall.ECONNREFUSED
		} else {
			r.Errno = refusalErrnos[strings.ToLower(err.Message)]
		}
	}
	return r
}
