package sweeper

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

func TestReadCoverage(t *testing.T) {
	csvs, secrets, nodes := rules.ClusterServiceVersions.GroupResource(), rules.Secrets.GroupResource(), rules.Nodes.GroupResource()
	coverage := readCoverage(map[schema.GroupResource][]rules.Read{
		csvs:    {{Resource: csvs, Namespace: "a", Name: "x"}, {Resource: csvs}},
		secrets: {{Resource: secrets, Namespace: "a", Selector: "owner=helm"}, {Resource: secrets, Namespace: "b"}},
		nodes:   {{Resource: nodes, Name: "n"}},
	})
	assert.Equal(t, rules.Coverage{
		Partial:  []schema.GroupResource{nodes},
		ListedIn: map[schema.GroupResource][]string{secrets: {"a", "b"}},
	}, coverage, "a list across namespaces holds all; lists in namespaces hold those; a read by name holds no more than itself")

	view := rules.NewView(time.Now(), []rules.Resource{rules.ClusterServiceVersions, rules.Secrets, rules.Nodes}, coverage, nil)
	assert.True(t, view.Observed(csvs, "any"))
	assert.True(t, view.Observed(secrets, "b"))
	assert.False(t, view.Observed(secrets, "c"))
	assert.False(t, view.Observed(nodes, ""))
}

func TestUniqueObjects(t *testing.T) {
	a := &rules.Object{Resource: &rules.ConfigMaps, Meta: rules.Meta{Name: "a", UID: "1"}}
	again := &rules.Object{Resource: &rules.ConfigMaps, Meta: rules.Meta{Name: "a", UID: "1"}}
	event := &rules.Object{Resource: &rules.Events, Meta: rules.Meta{Name: "a", UID: "1"}}
	assert.Equal(t, []*rules.Object{a, event}, uniqueObjects([]*rules.Object{a, again, event}), "one per resource and UID")
}

func TestServerClock(t *testing.T) {
	for name, skew := range map[string]time.Duration{"an hour behind": -time.Hour, "two minutes ahead": 2 * time.Minute, "none": 0} {
		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Date", time.Now().Add(skew).UTC().Format(http.TimeFormat))
		}))
		clk := &serverClock{}
		resp, err := (&http.Client{Transport: clk.wrap(http.DefaultTransport)}).Get(server.URL)
		if assert.NoError(t, err, name) {
			resp.Body.Close()
		}
		server.Close()
		assert.InDelta(t, skew.Seconds(), time.Duration(clk.offset.Load()).Seconds(), 1, "%s: the Date header's second is its resolution", name)
		assert.WithinDuration(t, time.Now().Add(skew), clk.Now(), time.Second, name)
	}
}

func TestServerClockKeepsItsOffset(t *testing.T) {
	skew := -time.Hour
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Date", time.Now().Add(skew).UTC().Format(http.TimeFormat))
	}))
	defer server.Close()
	clk := &serverClock{}
	client := &http.Client{Transport: clk.wrap(http.DefaultTransport)}
	get := func() {
		resp, err := client.Get(server.URL)
		require.NoError(t, err)
		resp.Body.Close()
	}
	get()
	first := clk.offset.Load()
	for range 5 {
		get()
		assert.Equal(t, first, clk.offset.Load(), "no jitter within the header's resolution")
	}
	skew = time.Minute
	get()
	assert.InDelta(t, time.Minute.Seconds(), time.Duration(clk.offset.Load()).Seconds(), 1, "a real change is followed")
}

func TestTooYoung(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	start := now.Add(-time.Minute)
	e := &Engine{Config: Config{MinAge: 10 * time.Minute}, Clock: clocktesting.NewFakePassiveClock(now)}
	object := func(name string, created time.Time) *rules.Object {
		return &rules.Object{Resource: &rules.ConfigMaps, Meta: rules.Meta{Namespace: "shop", Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(created)}}
	}
	old, young, meanwhile := object("old", now.Add(-time.Hour)), object("young", now.Add(-5*time.Minute)), object("meanwhile", now.Add(-30*time.Second))
	view := rules.NewView(now, []rules.Resource{rules.ConfigMaps}, rules.Coverage{}, []*rules.Object{old, young, meanwhile})
	tests := []struct {
		obj    *rules.Object
		action rules.Action
		want   string
	}{
		{old, rules.Delete{}, ""},
		{young, rules.Delete{}, "created 5m ago, less than --min-age=10m0s"},
		{young, rules.SetOwnerReferences{}, "created 5m ago, less than --min-age=10m0s"},
		{young, rules.RemoveFinalizers{}, ""},
		{meanwhile, rules.Delete{}, "created at 2026-11-23T11:59:30Z, after the sweep began"},
	}
	for _, tt := range tests {
		tooYoung, why := e.tooYoung(view, start, rules.Finding{Object: tt.obj.Ref(), Action: tt.action})
		assert.Equal(t, tt.want != "", tooYoung, "%s %s", tt.obj.Name, tt.action.Type())
		assert.Equal(t, tt.want, why)
	}
	e.Config.MinAge = 0
	tooYoung, why := e.tooYoung(view, start, rules.Finding{Object: meanwhile.Ref(), Action: rules.Delete{}})
	assert.True(t, tooYoung, "--min-age=0s still never deletes what was created after the sweep began: %s", why)
}

// servedGroups is discovery of a server that serves groups, each in one version.
type servedGroups struct {
	discovery.DiscoveryInterfaceWithContext
	groups map[string]*metav1.APIResourceList // by group version
}

func (s servedGroups) ServerGroupsWithContext(context.Context) (*metav1.APIGroupList, error) {
	list := &metav1.APIGroupList{}
	for gv := range s.groups {
		parsed, _ := schema.ParseGroupVersion(gv)
		version := metav1.GroupVersionForDiscovery{GroupVersion: gv, Version: parsed.Version}
		list.Groups = append(list.Groups, metav1.APIGroup{Name: parsed.Group, Versions: []metav1.GroupVersionForDiscovery{version}, PreferredVersion: version})
	}
	return list, nil
}

func (s servedGroups) ServerResourcesForGroupVersionWithContext(_ context.Context, gv string) (*metav1.APIResourceList, error) {
	return s.groups[gv], nil
}

func TestConfirmerDiscoversWhatWasNotServed(t *testing.T) {
	csvs := rules.ClusterServiceVersions.GroupResource()
	c := &Confirmer{Clients: &Clients{Discovery: servedGroups{groups: map[string]*metav1.APIResourceList{
		"operators.coreos.com/v1alpha1": {GroupVersion: "operators.coreos.com/v1alpha1", APIResources: []metav1.APIResource{
			{Name: "clusterserviceversions", Kind: "ClusterServiceVersion", Namespaced: true, Verbs: []string{"list"}}}},
	}}}}
	r, served, err := c.discover(context.Background(), csvs)
	require.NoError(t, err)
	assert.True(t, served, "the CRD was installed since the walk")
	assert.Equal(t, rules.ClusterServiceVersions, r)

	_, served, err = c.discover(context.Background(), rules.Leases.GroupResource())
	require.NoError(t, err)
	assert.False(t, served)
}
