package source

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
)

// Reason says in one phrase why a read failed, then the error itself:
// "timeout", "connection refused", "TLS", "unreachable" or "error". It
// names the class first so that reports can count unreadable answers by
// cause.
func Reason(err error) string {
	return reasonClass(err) + ": " + err.Error()
}

func reasonClass(err error) string {
	var (
		netErr     net.Error
		unknownCA  x509.UnknownAuthorityError
		hostErr    x509.HostnameError
		certErr    x509.CertificateInvalidError
		recordErr  tls.RecordHeaderError
		verifyErr  *tls.CertificateVerificationError
		alertError tls.AlertError
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &certErr),
		errors.As(err, &recordErr), errors.As(err, &verifyErr), errors.As(err, &alertError):
		return "TLS"
	case strings.Contains(err.Error(), "remote error: tls: "):
		// An alert from the peer (a client certificate refused or
		// missing) is crypto/tls's unexported alert type: only its text
		// says what it is.
		return "TLS"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "unreachable"
	case errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	return "error"
}

// NotDeployed is the reason of a source the lab does not run.
func NotDeployed(what string) string { return "not deployed: " + what }
