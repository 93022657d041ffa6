package source

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/faultline/faultline/framework/evidence"
)

// serveDNS answers A queries on loopback UDP from records (NXDOMAIN for
// any other name) until the test ends. golang.org/x/net/dns/dnsmessage
// packs the answers; the resolver under test is Go's own.
func serveDNS(t *testing.T, records map[string][]string) string {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, addr, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			ips, ok := records[q.Name.String()]
			rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
			if !ok {
				rh.RCode = dnsmessage.RCodeNameError
			}
			b := dnsmessage.NewBuilder(nil, rh)
			b.EnableCompression()
			b.StartQuestions()
			b.Question(q)
			b.StartAnswers()
			if q.Type == dnsmessage.TypeA {
				for _, ip := range ips {
					var a [4]byte
					copy(a[:], net.ParseIP(ip).To4())
					b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 5}, dnsmessage.AResource{A: a})
				}
			}
			out, err := b.Finish()
			if err == nil {
				pc.WriteTo(out, addr)
			}
		}
	}()
	return pc.LocalAddr().String()
}

func TestDNSReader(t *testing.T) {
	addr := serveDNS(t, map[string][]string{"stateful.faultline.svc.cluster.local.": {"10.250.31.62"}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var v evidence.DNSValue
	a := NewDNS(addr, "cluster.local", evidence.DefaultSubjects).Read(ctx)[evidence.ServiceDNS]
	if err := a.Decode(&v); err != nil || strings.Join(v.Addresses, ",") != "10.250.31.62" || v.Name != "stateful.faultline.svc.cluster.local." {
		t.Errorf("answer %+v, %v", v, err)
	}
	other := evidence.DefaultSubjects
	other.ServiceName = "absent"
	a = NewDNS(addr, "cluster.local", other).Read(ctx)[evidence.ServiceDNS]
	if err := a.Decode(&v); err != nil || len(v.Addresses) != 0 {
		t.Errorf("NXDOMAIN is the server's answer that the name does not exist: %+v, %v", a, err)
	}
	if a := NewDNSNotDeployed("the lab runs no cluster DNS").Read(ctx)[evidence.ServiceDNS]; a.State != evidence.Unreadable || a.Reason != "not deployed: the lab runs no cluster DNS" {
		t.Errorf("not deployed: %+v", a)
	}
	// A server that never answers: unreadable, not "no addresses".
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	sctx, scancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer scancel()
	if a := NewDNS(silent.LocalAddr().String(), "cluster.local", evidence.DefaultSubjects).Read(sctx)[evidence.ServiceDNS]; a.State != evidence.Unreadable {
		t.Errorf("a silent DNS server answered: %+v", a)
	}
}
