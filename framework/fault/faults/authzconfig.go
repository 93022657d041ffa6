package faults

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/faultline/faultline/lab"
)

// The API server's structured authorization configuration
// (AuthorizationConfiguration of apiserver.config.k8s.io), handled as
// generic YAML: the fault only puts one authorizer in front of whatever the
// file lists, and must keep every field it does not know as it was.

const authzConfigKind = "AuthorizationConfiguration"

var authzConfigVersions = []string{"apiserver.config.k8s.io/v1", "apiserver.config.k8s.io/v1beta1"}

// refusedWebhookPort is where the denying webhook "listens": nothing does,
// so every call is refused at once (a refused connection is not retried by
// the API server's webhook client) and failurePolicy Deny answers. Port 1
// (tcpmux) is served by nothing on a cluster host; inject checks that.
const refusedWebhookPort = 1

// denyWatchExpression selects exactly the identity's list and watch of
// resources: its user and, for each key of its extra, a value it names
// among the request's (a service account's pod-bound token on one node:
// the node name the API server reads from it). Every field is guarded
// with has(): a match condition that fails to evaluate counts as a
// failure of the webhook, which with failurePolicy Deny would deny
// requests the fault must let through. The user, the extra and the
// resources are checked names (checkIdentity: no quote can reach the
// expression).
func denyWatchExpression(id lab.Identity, resources []WatchedResource) string {
	var any []string
	for _, r := range resources {
		group := "(!has(request.resourceAttributes.group) || request.resourceAttributes.group == '')"
		if r.Group != "" {
			group = "(has(request.resourceAttributes.group) && request.resourceAttributes.group == '" + r.Group + "')"
		}
		any = append(any, "(request.resourceAttributes.resource == '"+r.Resource+"' && "+group+")")
	}
	conds := []string{
		"has(request.user)",
		"request.user == '" + id.User + "'",
	}
	keys := make([]string, 0, len(id.Extra))
	for k := range id.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var vs []string
		for _, v := range id.Extra[k] {
			vs = append(vs, "v == '"+v+"'")
		}
		conds = append(conds, "has(request.extra)", "'"+k+"' in request.extra",
			"request.extra['"+k+"'].exists(v, "+strings.Join(vs, " || ")+")")
	}
	return strings.Join(append(conds,
		"has(request.resourceAttributes)",
		"has(request.resourceAttributes.resource)",
		"("+strings.Join(any, " || ")+")",
		"(!has(request.resourceAttributes.subresource) || request.resourceAttributes.subresource == '')",
		"has(request.resourceAttributes.verb)",
		"request.resourceAttributes.verb in ['list', 'watch']",
	), " && ")
}

// extraKeyPattern is a key of a user's extra as Kubernetes writes them
// (authentication.kubernetes.io/node-name).
var extraKeyPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?(/[a-z0-9]([-a-z0-9.]*[a-z0-9])?)?$`)

// checkIdentity refuses an identity any part of which could not be put
// into a match condition's string literal as it is.
func checkIdentity(id lab.Identity) error {
	if id.User == "" || strings.ContainsAny(id.User, "'\\") {
		return fmt.Errorf("%q is not a user the fault can match", id.User)
	}
	for k, vs := range id.Extra {
		if !extraKeyPattern.MatchString(k) || len(vs) == 0 {
			return fmt.Errorf("extra %q = %v is not one the fault can match", k, vs)
		}
		for _, v := range vs {
			if !nodeNamePattern.MatchString(v) {
				return fmt.Errorf("extra %q value %q is not one the fault can match (a DNS-1123 subdomain)", k, v)
			}
		}
	}
	return nil
}

// denyWatchAuthorizer is the authorizer the fault puts first: a webhook
// that cannot be reached, failing closed, asked only about user's list
// and watch of resources. Nothing is cached, so heal takes effect at once.
func denyWatchAuthorizer(name string, id lab.Identity, resources []WatchedResource, kubeconfigPath string) map[string]any {
	return map[string]any{
		"type": "Webhook",
		"name": name,
		"webhook": map[string]any{
			"timeout":                                  "3s",
			"authorizedTTL":                            "1s",
			"unauthorizedTTL":                          "1s",
			"cacheAuthorizedRequests":                  false,
			"cacheUnauthorizedRequests":                false,
			"subjectAccessReviewVersion":               "v1",
			"matchConditionSubjectAccessReviewVersion": "v1",
			"failurePolicy":                            "Deny",
			"connectionInfo": map[string]any{
				"type":           "KubeConfigFile",
				"kubeConfigFile": kubeconfigPath,
			},
			"matchConditions": []any{
				map[string]any{"expression": denyWatchExpression(id, resources)},
			},
		},
	}
}

// renderDenyPodWatchConfig returns original with the denying webhook put
// before its first authorizer. It refuses a file that is not an
// AuthorizationConfiguration, lists no authorizer, or already holds an
// authorizer of the same name (a fault never adopts what it did not write).
func renderDenyWatchConfig(original []byte, name string, id lab.Identity, resources []WatchedResource, kubeconfigPath string) ([]byte, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(original, &doc); err != nil {
		return nil, fmt.Errorf("reading the authorization configuration: %w", err)
	}
	if doc == nil {
		return nil, errors.New("the authorization configuration is empty")
	}
	kind, _ := doc["kind"].(string)
	version, _ := doc["apiVersion"].(string)
	if kind != authzConfigKind || !containsString(authzConfigVersions, version) {
		return nil, fmt.Errorf("the file is a %q of %q, not a %s of %v", kind, version, authzConfigKind, authzConfigVersions)
	}
	list, ok := doc["authorizers"].([]any)
	if !ok || len(list) == 0 {
		return nil, errors.New("the authorization configuration lists no authorizers")
	}
	for i, a := range list {
		m, ok := a.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("authorizers[%d] is not an object", i)
		}
		if m["name"] == name {
			return nil, fmt.Errorf("authorizers[%d] is already named %q: the fault is injected already, or its heal did not finish", i, name)
		}
	}
	doc["authorizers"] = append([]any{denyWatchAuthorizer(name, id, resources, kubeconfigPath)}, list...)
	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("writing the authorization configuration: %w", err)
	}
	return out, nil
}

// refusedWebhookKubeconfig points the webhook at a port nothing serves.
func refusedWebhookKubeconfig() string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
  - name: refused
    cluster:
      server: https://127.0.0.1:%d
users:
  - name: kube-apiserver
    user: {}
contexts:
  - name: refused
    context: {cluster: refused, user: kube-apiserver}
current-context: refused
`, refusedWebhookPort)
}

// configHash is how the API server names the configuration it applied
// (apiserver_authorization_config_controller_last_config_info's hash).
func configHash(data []byte) string { return fmt.Sprintf("sha256:%x", sha256.Sum256(data)) }

// parseLastConfigHash reads the hash of the authorization configuration an
// API server last applied from its /metrics.
func parseLastConfigHash(metrics string) (string, error) {
	const name = "apiserver_authorization_config_controller_last_config_info{"
	var hashes []string
	for _, line := range strings.Split(metrics, "\n") {
		if !strings.HasPrefix(line, name) {
			continue
		}
		labels := line[len(name):]
		end := strings.IndexByte(labels, '}')
		if end < 0 {
			return "", fmt.Errorf("malformed metric line %q", line)
		}
		for _, l := range strings.Split(labels[:end], ",") {
			if v, ok := strings.CutPrefix(l, `hash="`); ok {
				hashes = append(hashes, strings.TrimSuffix(v, `"`))
			}
		}
	}
	switch len(hashes) {
	case 0:
		return "", errors.New("the API server reports no authorization configuration it applied (is it started with --authorization-config?)")
	case 1:
		return hashes[0], nil
	default:
		return "", fmt.Errorf("the API server reports %d applied authorization configurations: %v", len(hashes), hashes)
	}
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
