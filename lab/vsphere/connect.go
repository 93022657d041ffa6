package vsphere

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/session/keepalive"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// sessionKeepAlive is shorter than vCenter's default 30-minute idle
// timeout, so a session survives a long watch window between resets.
const sessionKeepAlive = 10 * time.Minute

// vcenterURL parses vsphere.url. Credentials inside the URL are refused:
// they would end up in error messages and process listings.
func vcenterURL(vc *Section) (*url.URL, error) {
	u, err := soap.ParseURL(vc.URL)
	if err != nil || u == nil || u.Host == "" {
		// The raw value is not repeated: it may hold a password.
		return nil, fmt.Errorf("vsphere.url is not a URL such as https://vcenter.example.org/sdk")
	}
	// ParseURL fills in an empty user; anything more came from the lab file.
	if u.User != nil {
		if pass, _ := u.User.Password(); u.User.Username() != "" || pass != "" {
			return nil, fmt.Errorf("vsphere.url must not carry a user or password; use vsphere.credentialsFile or %s/%s", EnvUsername, EnvPassword)
		}
	}
	return u, nil
}

// connect logs in to vCenter. Its errors name the vCenter and the user,
// never the password.
func connect(ctx context.Context, vc *Section, cred credentials) (*govmomi.Client, error) {
	u, err := vcenterURL(vc)
	if err != nil {
		return nil, err
	}
	shown := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
	sc := soap.NewClient(u, vc.Insecure)
	vimClient, err := vim25.NewClient(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("vCenter %s is unreachable: %w", shown, err)
	}
	vimClient.RoundTripper = keepalive.NewHandlerSOAP(vimClient.RoundTripper, sessionKeepAlive, nil)
	client := &govmomi.Client{Client: vimClient, SessionManager: session.NewManager(vimClient)}
	if err := client.Login(ctx, url.UserPassword(cred.Username, cred.Password)); err != nil {
		if fault.Is(err, &types.InvalidLogin{}) {
			return nil, fmt.Errorf("vCenter %s refused the login for user %s", shown, cred.Username)
		}
		return nil, fmt.Errorf("logging in to vCenter %s as user %s: %w", shown, cred.Username, err)
	}
	return client, nil
}
