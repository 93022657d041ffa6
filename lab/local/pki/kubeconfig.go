package pki

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfigWriter writes kubeconfigs with the CA and client credentials
// embedded, so that each file works on its own (copied elsewhere, or read
// by a process that sees another filesystem view).
type kubeconfigWriter struct {
	is          *issuer
	clusterName string
	caFile      string
}

// write makes or keeps the kubeconfig name for user at server with the
// client pair creds, and returns its path.
func (w kubeconfigWriter) write(name, server, user string, creds Pair) (string, error) {
	if err := w.is.ctx.Err(); err != nil {
		return "", err
	}
	path := filepath.Join(w.is.dir, name)
	ca, err := os.ReadFile(w.caFile)
	if err != nil {
		return "", fmt.Errorf("writing kubeconfig %s: %w", name, err)
	}
	cert, err := os.ReadFile(creds.Cert)
	if err != nil {
		return "", fmt.Errorf("writing kubeconfig %s: %w", name, err)
	}
	key, err := os.ReadFile(creds.Key)
	if err != nil {
		return "", fmt.Errorf("writing kubeconfig %s: %w", name, err)
	}
	contextName := user + "@" + w.clusterName
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[w.clusterName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: w.clusterName, AuthInfo: user}
	cfg.CurrentContext = contextName
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return "", fmt.Errorf("encoding kubeconfig %s: %w", name, err)
	}
	old, readErr := os.ReadFile(path)
	if st, statErr := os.Stat(path); readErr == nil && statErr == nil && string(old) == string(data) && st.Mode().Perm() == 0o600 {
		return path, nil
	}
	// 0600: the file embeds a private key.
	if err := writeFileAtomic(path, data, 0o600); err != nil {
		return "", err
	}
	w.is.written = append(w.is.written, path)
	return path, nil
}
