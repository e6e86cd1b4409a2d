package sweeper

import (
	"hash/maphash"
	"maps"
	"math/bits"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// interner shares, among the objects of one list, what repeats from one to the next: namespaces,
// label sets, annotations, finalizers and ownerReferences (the pods of a ReplicaSet name the same
// owner). Decoding allocates each string and map of each object anew; sharing them is most of
// what keeps a view of a million objects small. What it returns is shared: never modify it. An
// interner is used by one goroutine and dropped with its list: while the list is read, its tables
// cost at most an entry or two an object, and much less when objects share.
type interner struct {
	seed    maphash.Seed
	strings map[string]string
	// The sets, by hash; equal sets are found among those of the same hash.
	maps       map[uint64][]map[string]string
	finalizers map[uint64][][]string
	owners     map[uint64][][]metav1.OwnerReference
	// True and false, for ownerReferences' controller and blockOwnerDeletion: allocated apart,
	// as a pointer into the interner would keep it all.
	yes, no *bool
	// annotations are those the objects keep; the zero value keeps all.
	annotations rules.KeptAnnotations
}

func newInterner() *interner {
	return &interner{
		seed:       maphash.MakeSeed(),
		strings:    map[string]string{},
		maps:       map[uint64][]map[string]string{},
		finalizers: map[uint64][][]string{},
		owners:     map[uint64][][]metav1.OwnerReference{},
		yes:        ptr.To(true),
		no:         ptr.To(false),
	}
}

// string returns the shared copy of s.
func (in *interner) string(s string) string {
	if shared, ok := in.strings[s]; ok {
		return shared
	}
	in.strings[s] = s
	return s
}

// stringMap returns the shared copy of a map of labels or annotations; nil if it is empty.
func (in *interner) stringMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	var sum uint64
	for k, v := range m { // the order of a map's entries does not count: add their hashes up
		sum += bits.RotateLeft64(maphash.String(in.seed, k), 31) ^ maphash.String(in.seed, v)
	}
	return intern(in.maps, sum, m, maps.Equal, func(m map[string]string) map[string]string {
		shared := make(map[string]string, len(m))
		for k, v := range m {
			shared[in.string(k)] = in.string(v)
		}
		return shared
	})
}

// finalizerList returns the shared copy of a list of finalizers; nil if it is empty.
func (in *interner) finalizerList(list []string) []string {
	if len(list) == 0 {
		return nil
	}
	return intern(in.finalizers, in.listHash(list), list, slices.Equal, func(list []string) []string {
		shared := make([]string, len(list))
		for i, s := range list {
			shared[i] = in.string(s)
		}
		return shared
	})
}

// ownerReferences returns the shared copy of a list of ownerReferences; nil if it is empty.
func (in *interner) ownerReferences(refs []metav1.OwnerReference) []metav1.OwnerReference {
	if len(refs) == 0 {
		return nil
	}
	var hash uint64
	for _, ref := range refs { // the UID names the owner; the other fields rarely differ
		hash = bits.RotateLeft64(hash, 31) ^ maphash.String(in.seed, string(ref.UID))
	}
	return intern(in.owners, hash, refs, func(a, b []metav1.OwnerReference) bool {
		return slices.EqualFunc(a, b, sameOwnerReference)
	}, func(refs []metav1.OwnerReference) []metav1.OwnerReference {
		shared := make([]metav1.OwnerReference, len(refs))
		for i, ref := range refs {
			shared[i] = metav1.OwnerReference{
				APIVersion:         in.string(ref.APIVersion),
				Kind:               in.string(ref.Kind),
				Name:               ref.Name,
				UID:                ref.UID,
				Controller:         in.bool(ref.Controller),
				BlockOwnerDeletion: in.bool(ref.BlockOwnerDeletion),
			}
		}
		return shared
	})
}

// intern returns the value in table equal to v, or adds the copy that shared makes of it.
func intern[T any](table map[uint64][]T, hash uint64, v T, equal func(T, T) bool, shared func(T) T) T {
	for _, candidate := range table[hash] {
		if equal(candidate, v) {
			return candidate
		}
	}
	v = shared(v)
	table[hash] = append(table[hash], v)
	return v
}

func sameOwnerReference(a, b metav1.OwnerReference) bool {
	return a.APIVersion == b.APIVersion && a.Kind == b.Kind && a.Name == b.Name && a.UID == b.UID &&
		sameBool(a.Controller, b.Controller) && sameBool(a.BlockOwnerDeletion, b.BlockOwnerDeletion)
}

func sameBool(a, b *bool) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// bool returns the shared copy of b.
func (in *interner) bool(b *bool) *bool {
	switch {
	case b == nil:
		return nil
	case *b:
		return in.yes
	default:
		return in.no
	}
}

// findingInterner shares, among a run's findings, what thousands alike repeat once each is in the
// report: their apiVersion, their evidence (the rule's verdict and the same facts re-checked for a
// batch), and the summary of their action (the same finalizers released). What it returns is
// shared: never modify it.
type findingInterner struct {
	*interner
	evidence map[uint64][][]string
	actions  map[uint64][]*report.ActionSummary
}

func newFindingInterner() *findingInterner {
	return &findingInterner{interner: newInterner(), evidence: map[uint64][][]string{}, actions: map[uint64][]*report.ActionSummary{}}
}

// finding makes f share what it repeats of the findings before it.
func (in *findingInterner) finding(f *report.FindingResult) {
	f.Object.APIVersion = in.string(f.Object.APIVersion)
	if len(f.Evidence) > 0 {
		f.Evidence = intern(in.evidence, in.listHash(f.Evidence), f.Evidence, slices.Equal, identity)
	}
	if a := f.Action; a != nil && a.AddOwnerReferences == nil && a.RemoveOwnerReferences == nil && a.GracePeriodSeconds == nil {
		hash := maphash.String(in.seed, a.Type) ^ in.listHash(a.Finalizers)
		f.Action = intern(in.actions, hash, a, func(x, y *report.ActionSummary) bool {
			return x.Type == y.Type && slices.Equal(x.Finalizers, y.Finalizers) &&
				y.AddOwnerReferences == nil && y.RemoveOwnerReferences == nil && y.GracePeriodSeconds == nil
		}, identity)
	}
}

func (in *interner) listHash(list []string) uint64 {
	var hash uint64
	for _, s := range list {
		hash = bits.RotateLeft64(hash, 31) ^ maphash.String(in.seed, s)
	}
	return hash
}

func identity[T any](v T) T { return v }
