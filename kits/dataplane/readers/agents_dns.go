package readers

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/faultline/faultline/kits/dataplane"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/source"
	"github.com/faultline/faultline/lab"
)

// PodDNS reads, through a client pod's netexec /dns, one CoreDNS
// instance's answer for a name: the instance is the pod the selector finds
// in dnsNamespace on dnsNode, asked at its own address over TCP, so the
// answer is that instance's and no other's (the cluster DNS service would
// pick one). Source "coredns/<dnsNode>", question dataplane.AgentDNSAnswer.
// An instance or client that cannot be found or asked is unreadable with
// the reason; a server failure (SERVFAIL) is an answer with its code, and
// no response within the timeout is unreadable.
type PodDNS struct {
	dialer       *PodDialer
	name         evidence.Source
	lookup       string
	dnsNamespace string
	selector     string
	dnsNode      string
}

// NewPodDNS makes the reader asking, from the client pod namespace/pod on
// host, the instance on dnsNode for lookup.
func NewPodDNS(host lab.Host, client kubernetes.Interface, namespace, pod, dnsNamespace, selector, dnsNode, lookup string, timeout time.Duration) *PodDNS {
	d := &PodDNS{name: evidence.Source("coredns/" + dnsNode), lookup: lookup, dnsNamespace: dnsNamespace, selector: selector, dnsNode: dnsNode}
	d.dialer = NewPodDialer(host, client, dataplane.AgentDNSAnswer, namespace, pod, nil, "", timeout)
	return d
}

func (d *PodDNS) Source() evidence.Source { return d.name }
func (d *PodDNS) Questions() []evidence.Question {
	return []evidence.Question{dataplane.AgentDNSAnswer}
}

// instance is the CoreDNS pod on dnsNode and its address, looked up each
// read: a reset or a rollout gives the instance another address.
func (d *PodDNS) instance(ctx context.Context) (string, string, error) {
	pods, err := d.dialer.client.CoreV1().Pods(d.dnsNamespace).List(ctx, metav1.ListOptions{LabelSelector: d.selector})
	if err != nil {
		return "", "", fmt.Errorf("finding the DNS instance on %s: %s", d.dnsNode, source.Reason(err))
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == d.dnsNode && p.Status.PodIP != "" && p.DeletionTimestamp == nil {
			return d.dnsNamespace + "/" + p.Name, p.Status.PodIP, nil
		}
	}
	return "", "", fmt.Errorf("error: no DNS instance (%s in %s) with an address on %s", d.selector, d.dnsNamespace, d.dnsNode)
}

// netexecDNS is netexec's /dns answer.
type netexecDNS struct {
	RCode   string `json:"rcode"`
	Answers []struct {
		IP  string `json:"ip"`
		TTL uint32 `json:"ttl"`
	} `json:"answers"`
	Error string `json:"error"`
}

func (d *PodDNS) Read(ctx context.Context) map[evidence.Question]evidence.Answer {
	one := func(a evidence.Answer) map[evidence.Question]evidence.Answer {
		return map[evidence.Question]evidence.Answer{dataplane.AgentDNSAnswer: a}
	}
	inst, ip, err := d.instance(ctx)
	if err != nil {
		return one(evidence.UnreadableAnswer(err.Error(), now()))
	}
	client, err := d.dialer.address(ctx)
	if err != nil {
		return one(evidence.UnreadableAnswer(err.Error(), now()))
	}
	server := net.JoinHostPort(ip, "53")
	q := url.Values{"name": {d.lookup}, "server": {server}, "timeout": {d.dialer.timeout.String()}}
	u := "http://" + net.JoinHostPort(client, strconv.Itoa(PodPort)) + "/dns?" + q.Encode()
	status, body, err := getVia(ctx, d.dialer.http, u)
	at := now()
	if err != nil {
		d.dialer.forget(client)
		return one(evidence.UnreadableAnswer(fmt.Sprintf("asking pod %s/%s at %s from %s: %s", d.dialer.namespace, d.dialer.pod, client, d.dialer.host.Name(), source.Reason(err)), at))
	}
	if status != http.StatusOK {
		return one(evidence.UnreadableAnswer(fmt.Sprintf("error: pod %s/%s answered %d: %s", d.dialer.namespace, d.dialer.pod, status, source.FirstLine([]byte(body))), at))
	}
	var r netexecDNS
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		return one(evidence.UnreadableAnswer(fmt.Sprintf("error: pod %s/%s: its answer is not a lookup result: %v", d.dialer.namespace, d.dialer.pod, err), at))
	}
	if r.RCode == "" {
		// No response came: the instance said nothing, which is no answer.
		return one(evidence.UnreadableAnswer(fmt.Sprintf("%s (%s) gave no answer for %s: %s", inst, server, d.lookup, r.Error), at))
	}
	v := dataplane.DNSAnswerValue{Name: d.lookup, Server: server, Instance: inst, RCode: r.RCode}
	for _, a := range r.Answers {
		v.Answers = append(v.Answers, dataplane.DNSRecord{IP: a.IP, TTL: a.TTL})
	}
	return one(evidence.EncodedAnswer(v, at, ""))
}
