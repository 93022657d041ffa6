package vsphere

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/faultline/faultline/lab"
	labssh "github.com/faultline/faultline/lab/ssh"
)

// Environment variables read when the lab file names no credentials file.
const (
	EnvUsername = "FAULTLINE_VSPHERE_USERNAME"
	EnvPassword = "FAULTLINE_VSPHERE_PASSWORD"
)

// credentials are a vCenter login. They are kept out of every error, log
// line and report: only the user name is ever shown.
type credentials struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// String keeps the password out of anything that formats credentials.
func (c credentials) String() string { return "user " + c.Username }

// GoString keeps the password out of %#v as well.
func (c credentials) GoString() string { return c.String() }

// loadCredentials reads vsphere.credentialsFile (relative paths are taken
// from the lab file's directory, so a lab file and its credentials can be
// kept together) or, without one, the two environment variables.
func loadCredentials(c *lab.Config) (credentials, error) {
	if sectionOf(c).CredentialsFile == "" {
		user, pass := os.Getenv(EnvUsername), os.Getenv(EnvPassword)
		var missing []error
		if user == "" {
			missing = append(missing, fmt.Errorf("%s is not set", EnvUsername))
		}
		if pass == "" {
			missing = append(missing, fmt.Errorf("%s is not set", EnvPassword))
		}
		if len(missing) > 0 {
			return credentials{}, fmt.Errorf("vsphere lab %s has no credentials: set vsphere.credentialsFile in the lab file or both environment variables: %w", c.Name, errors.Join(missing...))
		}
		return credentials{Username: user, Password: pass}, nil
	}
	path := labssh.ExpandHome(sectionOf(c).CredentialsFile)
	if !filepath.IsAbs(path) && c.Path() != "" {
		path = filepath.Join(filepath.Dir(c.Path()), path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return credentials{}, fmt.Errorf("reading vsphere.credentialsFile: %w", err)
	}
	var cred credentials
	// A parse error from the YAML library names lines and keys, never values.
	if err := yaml.UnmarshalStrict(data, &cred); err != nil {
		return credentials{}, fmt.Errorf("vsphere.credentialsFile %s must be YAML with username and password: %w", path, err)
	}
	var missing []error
	if cred.Username == "" {
		missing = append(missing, errors.New("username is empty"))
	}
	if cred.Password == "" {
		missing = append(missing, errors.New("password is empty"))
	}
	if len(missing) > 0 {
		return credentials{}, fmt.Errorf("vsphere.credentialsFile %s: %w", path, errors.Join(missing...))
	}
	return cred, nil
}
