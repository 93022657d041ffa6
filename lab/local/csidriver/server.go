package csidriver

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// MaxSocketPath is the longest path a unix socket address holds
// (sun_path's 108 bytes, one for the NUL).
const MaxSocketPath = 107

// Listen listens on a unix socket at path, making its directory. A socket
// file left by a process that is gone is replaced; one that answers is in
// use, which is an error, as is a path too long for a socket address or
// anything there that is not a socket.
func Listen(path string) (net.Listener, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("socket %q: not an absolute path", path)
	}
	if len(path) > MaxSocketPath {
		return nil, fmt.Errorf("socket %s: %d bytes, more than a unix socket address holds (%d)", path, len(path), MaxSocketPath)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("socket %s: a %s is there, not a socket", path, fi.Mode().Type())
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("socket %s: another process serves it", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("socket %s: removing the stale socket: %w", path, err)
		}
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o660); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// NewServer is a gRPC server that logs every call it answers with an
// error, and every call at debug level.
func NewServer(log *slog.Logger, name string) *grpc.Server {
	return grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := h(ctx, req)
		attrs := []any{"server", name, "method", info.FullMethod, "took", time.Since(start).Round(time.Microsecond)}
		if err != nil {
			log.Warn("call failed", append(attrs, "code", status.Code(err).String(), "error", status.Convert(err).Message())...)
		} else {
			log.Debug("call", attrs...)
		}
		return resp, err
	}))
}
