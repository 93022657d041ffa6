package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// KindEtcdNoSpace is the kind of EtcdNoSpace faults.
const KindEtcdNoSpace = "etcd-no-space"

// ClassEtcdNoSpace is etcd refusing every write while reads go on.
const ClassEtcdNoSpace fault.Class = "etcd-no-space"

type etcdNoSpaceParams struct{}

func (etcdNoSpaceParams) check() error { return nil }

// EtcdNoSpace raises etcd's NOSPACE alarm for every member through etcd's
// Maintenance/Alarm API (action ACTIVATE), the same raft-replicated alarm a
// member raises when its backend reaches the quota: every member then
// applies writes with its capped applier and refuses them with "database
// space exceeded", while reads and deletes go on. The database is not
// filled, so there is no space to free at heal: heal disarms the NOSPACE
// alarms, which is what lets writes through again.
func EtcdNoSpace() fault.Fault { return &etcdNoSpace{} }

type etcdNoSpace struct{ p etcdNoSpaceParams }

func (f *etcdNoSpace) Kind() string            { return KindEtcdNoSpace }
func (f *etcdNoSpace) Class() fault.Class      { return ClassEtcdNoSpace }
func (f *etcdNoSpace) Params() json.RawMessage { return mustJSON(f.p) }

// Inject refuses a cluster with any alarm already raised: heal disarms
// every NOSPACE alarm, so it must be the only one who raised one.
func (f *etcdNoSpace) Inject(ctx context.Context, l lab.Lab) error {
	c, err := etcdClient(l, "etcd NOSPACE alarm")
	if err != nil {
		return err
	}
	defer c.Close()
	alarms, err := c.AlarmList(ctx)
	if err != nil {
		return fmt.Errorf("etcd NOSPACE alarm: listing alarms: %w", err)
	}
	if len(alarms.Alarms) > 0 {
		return fmt.Errorf("etcd NOSPACE alarm: etcd already has alarms raised (%s); nothing was changed", describeAlarms(alarms.Alarms))
	}
	members, err := c.MemberList(ctx)
	if err != nil {
		return fmt.Errorf("etcd NOSPACE alarm: listing members: %w", err)
	}
	// clientv3 only lists and disarms alarms; raising one is the raw
	// Maintenance RPC the server handles for its own quota check.
	mc := pb.NewMaintenanceClient(c.ActiveConnection())
	for _, m := range members.Members {
		if _, err := mc.Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, MemberID: m.ID, Alarm: pb.AlarmType_NOSPACE}); err != nil {
			return fmt.Errorf("etcd NOSPACE alarm: raising it for member %s: %w", m.Name, err)
		}
		crashpoint.Reach("etcd-no-space/inject/member")
	}
	return nil
}

func (f *etcdNoSpace) Heal(ctx context.Context, l lab.Lab) error {
	c, err := etcdClient(l, "healing etcd NOSPACE alarm")
	if err != nil {
		return err
	}
	defer c.Close()
	alarms, err := c.AlarmList(ctx)
	if err != nil {
		return fmt.Errorf("healing etcd NOSPACE alarm: listing alarms: %w", err)
	}
	for _, a := range alarms.Alarms {
		if a.Alarm != pb.AlarmType_NOSPACE {
			continue
		}
		fault.Found(ctx, "etcd: NOSPACE alarm of member %x", a.MemberID)
		if _, err := c.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: a.MemberID, Alarm: a.Alarm}); err != nil {
			return fmt.Errorf("healing etcd NOSPACE alarm: disarming it for member %x: %w", a.MemberID, err)
		}
		fault.Removed(ctx, "etcd: NOSPACE alarm of member %x, disarmed", a.MemberID)
		crashpoint.Reach("etcd-no-space/heal/disarmed")
	}
	return nil
}

// Probe asks etcd which alarms it reports.
func (f *etcdNoSpace) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	c, err := etcdClient(l, "probing etcd alarms")
	if err != nil {
		return fault.Effect{}, err
	}
	defer c.Close()
	alarms, err := c.AlarmList(ctx)
	if err != nil {
		return fault.Effect{}, fmt.Errorf("probing etcd alarms: %w", err)
	}
	for _, a := range alarms.Alarms {
		if a.Alarm == pb.AlarmType_NOSPACE {
			return fault.Effect{Observed: true, Detail: "etcd reports alarms: " + describeAlarms(alarms.Alarms)}, nil
		}
	}
	return fault.Effect{Detail: "etcd reports no NOSPACE alarm (alarms: " + describeAlarms(alarms.Alarms) + ")"}, nil
}

func describeAlarms(as []*pb.AlarmMember) string {
	if len(as) == 0 {
		return "none"
	}
	var s []string
	for _, a := range as {
		s = append(s, fmt.Sprintf("%s on member %x", a.Alarm, a.MemberID))
	}
	return strings.Join(s, ", ")
}

func init() {
	register(KindEtcdNoSpace, func(p etcdNoSpaceParams) fault.Fault { return &etcdNoSpace{p: p} })
}
