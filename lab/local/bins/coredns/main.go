// Command coredns is CoreDNS with only the plugins the local lab's cluster DNS
// uses: it answers the cluster domain from the API (kubernetes), caches
// (cache), logs (errors, log), serves its health and readiness (health,
// ready) and metrics (prometheus), and reloads its Corefile (reload). Fewer
// plugins than CoreDNS's own build make a smaller binary and a shorter build;
// nothing here forwards queries off the lab.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	// The plugins, each registering itself with the server.
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

// directives is the order in which a server block's plugins handle a query:
// CoreDNS's own order (its plugin.cfg) restricted to the plugins linked here.
var directives = []string{
	"reload",
	"ready",
	"health",
	"prometheus",
	"errors",
	"log",
	"cache",
	"kubernetes",
}

func main() {
	dnsserver.Directives = directives
	coremain.Run()
}
