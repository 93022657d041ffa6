package components

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// HTTPSOK GETs url as the lab's admin (which etcd and the API servers
// accept) and checks the body contains want. The serving certificate is
// verified against the lab CA except for the controller-manager and
// scheduler, whose self-signed serving certificates no CA vouches for.
func (c *Cluster) HTTPSOK(ctx context.Context, url, want string) error {
	hc, err := c.adminHTTPClient()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64*1024))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

func (c *Cluster) adminHTTPClient() (*http.Client, error) {
	c.httpOnce.Do(func() {
		cc, err := c.Env(context.Background())
		if err != nil {
			c.httpErr = err
			return
		}
		pem, err := os.ReadFile(cc.PKI.CA.Cert)
		if err != nil {
			c.httpErr = err
			return
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		cert, err := tls.LoadX509KeyPair(cc.PKI.Admin.Cert, cc.PKI.Admin.Key)
		if err != nil {
			c.httpErr = fmt.Errorf("admin certificate: %w", err)
			return
		}
		verify := &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}
		self := &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{cert}} //nolint:gosec // self-signed health endpoints only
		c.httpClient = &http.Client{
			Timeout: 5 * time.Second,
			Transport: &selfSignedAware{
				verified:   &http.Transport{TLSClientConfig: verify, DisableKeepAlives: true},
				selfSigned: &http.Transport{TLSClientConfig: self, DisableKeepAlives: true},
			},
		}
	})
	return c.httpClient, c.httpErr
}

// selfSignedAware sends requests to the controller-manager and scheduler
// ports without CA verification and everything else with it.
type selfSignedAware struct {
	verified, selfSigned http.RoundTripper
}

func (t *selfSignedAware) RoundTrip(r *http.Request) (*http.Response, error) {
	switch r.URL.Port() {
	case fmt.Sprint(controllerManagerPort), fmt.Sprint(schedulerPort):
		return t.selfSigned.RoundTrip(r)
	}
	return t.verified.RoundTrip(r)
}

// httpOK GETs a plain-HTTP health endpoint and checks it answers 200.
func httpOK(ctx context.Context, url string) error {
	_, err := httpGet(ctx, url)
	return err
}

// httpGet GETs a plain-HTTP endpoint and returns the start of its body
// when it answers 200.
func httpGet(ctx context.Context, url string) (string, error) {
	var body string
	err := httpRead(ctx, url, func(r io.Reader) error {
		b, _ := io.ReadAll(io.LimitReader(r, 4096))
		body = string(b)
		return nil
	})
	return body, err
}

// httpRead GETs a plain-HTTP endpoint and hands its body to read when it
// answers 200; otherwise the error gives the status and the body's start.
func httpRead(ctx context.Context, url string, read func(io.Reader) error) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return read(resp.Body)
}
