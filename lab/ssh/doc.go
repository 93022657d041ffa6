// Package ssh reaches lab hosts over SSH with golang.org/x/crypto/ssh.
//
// Host keys are always verified against a known_hosts file: an unknown or a
// changed key is refused with an error naming the host and the file, unless
// the lab opts in to accepting keys of hosts it has never seen (a changed key
// is refused even then). A jump host is dialled first and the target is
// reached through it, as OpenSSH's ProxyJump does. One connection per host
// carries concurrent sessions, as many at once as Options.MaxSessions allows;
// a connection that breaks (the host was powered off, sshd restarted) is
// dialled again on next use, with the identity file read anew when
// Options.ReadIdentityOnDial says the key may be made after the client.
//
// Client.Dial opens connections from the server as forwarded channels of
// the same connection (direct-tcpip, direct-streamlocal), without running
// anything there.
//
// Host implements lab.Host on top of a Client: commands, dials, services
// through systemctl, signals to a service's main PID. Power operations are supplied
// by the backend that knows how (vSphere, Proxmox) through WithPower. The
// local lab, whose hosts are network namespaces running their own sshd, runs
// commands and dials through a Client and supervises services itself.
package ssh
