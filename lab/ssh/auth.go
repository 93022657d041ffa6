package ssh

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	xssh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// loadIdentity reads a private key file. Errors name the file, never its
// content.
func loadIdentity(path string) (xssh.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading identity file: %w", err)
	}
	signer, err := xssh.ParsePrivateKey(data)
	var missing *xssh.PassphraseMissingError
	if errors.As(err, &missing) {
		return nil, fmt.Errorf("identity file %s is protected by a passphrase: load it into the SSH agent and set ssh.useAgent", path)
	}
	if err != nil {
		return nil, fmt.Errorf("identity file %s is not a private key this client can read", path)
	}
	return signer, nil
}

// authMethod offers the identity file's key and then the agent's keys as
// one publickey method: x/crypto/ssh tries each method name only once, so
// two publickey methods would leave the second unused.
func authMethod(identity xssh.Signer, useAgent bool) (xssh.AuthMethod, io.Closer, error) {
	var agentConn net.Conn
	var agentClient agent.ExtendedAgent
	if useAgent {
		sock := os.Getenv("SSH_AUTH_SOCK")
		if sock == "" {
			if identity == nil {
				return nil, nil, errors.New("ssh.useAgent is set but SSH_AUTH_SOCK is not")
			}
		} else {
			c, err := net.Dial("unix", sock)
			if err != nil {
				if identity == nil {
					return nil, nil, fmt.Errorf("connecting to the SSH agent at $SSH_AUTH_SOCK: %w", err)
				}
			} else {
				agentConn, agentClient = c, agent.NewClient(c)
			}
		}
	}
	method := xssh.PublicKeysCallback(func() ([]xssh.Signer, error) {
		var signers []xssh.Signer
		if identity != nil {
			signers = append(signers, identity)
		}
		if agentClient != nil {
			fromAgent, err := agentClient.Signers()
			if err != nil && len(signers) == 0 {
				return nil, fmt.Errorf("listing the SSH agent's keys: %w", err)
			}
			signers = append(signers, fromAgent...)
		}
		return signers, nil
	})
	var closer io.Closer = nopCloser{}
	if agentConn != nil {
		closer = agentConn
	}
	return method, closer, nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }
