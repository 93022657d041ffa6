package ssh

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/lab"
)

// Defaults for Options fields left zero.
const (
	DefaultPort           = 22
	DefaultConnectTimeout = 15 * time.Second
	DefaultKeepAlive      = 5 * time.Second
	// keepAliveMisses probes unanswered in a row close a connection: a host
	// that is hard powered off sends no FIN, so without probes a connection
	// to it would hang until TCP gives up, minutes later.
	keepAliveMisses = 3
	// DefaultMaxSessions stays below OpenSSH's default MaxSessions (10),
	// above which the server refuses new sessions on a connection outright.
	DefaultMaxSessions = 8
)

// Options say how to reach one SSH server.
type Options struct {
	// Name is what errors call the server (the host's name in the lab file).
	Name string
	// Address is a host name or IP, optionally with ":port".
	Address string
	// Port is used when Address has none. Default 22.
	Port int
	User string
	// IdentityFile is a private key file (not passphrase-protected; keys
	// with a passphrase belong in the agent).
	IdentityFile string
	// ReadIdentityOnDial reads IdentityFile at every dial instead of once
	// in New, for a key that is made, or made anew, after the client is
	// built (the local lab makes its key when it is brought up). A missing
	// or unreadable file is then an error of the dial, not of New.
	ReadIdentityOnDial bool
	// UseAgent offers the keys of the agent at $SSH_AUTH_SOCK as well.
	UseAgent bool
	// KnownHosts is the known_hosts file host keys are verified against.
	KnownHosts string
	// AcceptNewHostKeys appends the key of a host that KnownHosts has no
	// entry for. A changed key is refused regardless.
	AcceptNewHostKeys bool
	// Jump is dialled first; the connection to Address goes through it.
	Jump *Options
	// Via is a client already made for the jump host, shared by the hosts
	// of a lab so that they reach it over one connection; it takes the
	// place of Jump and is not closed with this client.
	Via *Client
	// ConnectTimeout bounds the TCP connect and SSH handshake. Default 15s.
	ConnectTimeout time.Duration
	// KeepAlive is the interval between keepalive probes. Default 5s.
	KeepAlive time.Duration
	// MaxSessions bounds the sessions open at once on the connection;
	// further commands wait for one to end. Default DefaultMaxSessions;
	// more only for a server whose MaxSessions allows them.
	MaxSessions int
}

// OptionsFor builds the Options that reach a host at address with a lab's
// SSH settings, its jump host included.
func OptionsFor(name, address string, c *lab.SSHConfig) (Options, error) {
	if c == nil {
		return Options{}, fmt.Errorf("host %s: the lab has no ssh settings", name)
	}
	o := Options{
		Name:              name,
		Address:           address,
		Port:              c.Port,
		User:              c.User,
		IdentityFile:      ExpandHome(c.IdentityFile),
		UseAgent:          c.UseAgent,
		KnownHosts:        ExpandHome(c.KnownHosts),
		AcceptNewHostKeys: c.AcceptNewHostKeys,
	}
	if c.Jump != "" {
		j, err := ParseJump(c.Jump)
		if err != nil {
			return Options{}, fmt.Errorf("ssh.jump: %w", err)
		}
		j.IdentityFile, j.UseAgent = o.IdentityFile, o.UseAgent
		j.KnownHosts, j.AcceptNewHostKeys = o.KnownHosts, o.AcceptNewHostKeys
		o.Jump = &j
	}
	return o, o.validate()
}

// ParseJump parses a jump host written user@host[:port]; only the address
// fields of the result are set.
func ParseJump(s string) (Options, error) {
	user, hostport, ok := strings.Cut(s, "@")
	if !ok || user == "" || hostport == "" {
		return Options{}, fmt.Errorf("%q must be user@host[:port]", s)
	}
	host, port, err := splitHostPort(hostport, DefaultPort)
	if err != nil {
		return Options{}, fmt.Errorf("%q: %w", s, err)
	}
	return Options{Name: "jump host " + host, Address: host, Port: port, User: user}, nil
}

// splitHostPort accepts host, host:port, [v6]:port and a bare IPv6 address.
func splitHostPort(s string, defaultPort int) (string, int, error) {
	host, portText, err := net.SplitHostPort(s)
	if err != nil {
		// No port (or a bare IPv6 address).
		return strings.Trim(s, "[]"), defaultPort, nil
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("%q is not a port", portText)
	}
	return host, port, nil
}

func (o *Options) withDefaults() Options {
	d := *o
	if d.Port == 0 {
		d.Port = DefaultPort
	}
	if d.ConnectTimeout == 0 {
		d.ConnectTimeout = DefaultConnectTimeout
	}
	if d.KeepAlive == 0 {
		d.KeepAlive = DefaultKeepAlive
	}
	if d.MaxSessions == 0 {
		d.MaxSessions = DefaultMaxSessions
	}
	if d.Name == "" {
		d.Name = d.Address
	}
	return d
}

// target is the host:port dialled, also the name looked up in known_hosts.
func (o *Options) target() (string, error) {
	host, port, err := splitHostPort(o.Address, o.Port)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

func (o *Options) validate() error {
	var missing []string
	if o.Address == "" {
		missing = append(missing, "address")
	}
	if o.User == "" {
		missing = append(missing, "user")
	}
	if o.KnownHosts == "" {
		missing = append(missing, "known_hosts file (host keys are always verified)")
	}
	if o.IdentityFile == "" && !o.UseAgent {
		missing = append(missing, "identity file or agent")
	}
	if len(missing) > 0 {
		return fmt.Errorf("ssh to %s: missing %s", o.Name, strings.Join(missing, ", "))
	}
	if _, err := o.target(); err != nil {
		return fmt.Errorf("ssh to %s: address %w", o.Name, err)
	}
	if o.ReadIdentityOnDial && o.IdentityFile == "" {
		return fmt.Errorf("ssh to %s: reading the identity file on dial needs an identity file", o.Name)
	}
	if o.MaxSessions < 0 {
		return fmt.Errorf("ssh to %s: max sessions %d is negative", o.Name, o.MaxSessions)
	}
	if o.Jump != nil && o.Via == nil {
		return o.Jump.validate()
	}
	return nil
}
