package rules

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// What rules read of an object's content (Object.Content, the fields a ContentRequest asked for):
// nested fields, status conditions and the times in them. Each reads leniently: a field that is
// absent or of another type reads as its zero value, which the rules take as "not known".

// nestedString reads a string field of an object's content; "" if absent.
func nestedString(obj *Object, fields ...string) string {
	s, _, _ := unstructured.NestedString(obj.Content, fields...)
	return s
}

// nestedInt reads an integer field of an object's content; 0 if absent.
func nestedInt(obj *Object, fields ...string) int64 {
	n, _, _ := unstructured.NestedInt64(obj.Content, fields...)
	return n
}

// conditionStatus returns the status of an object's condition (status.conditions); "" if it has none.
func conditionStatus(obj *Object, conditionType string) string {
	status, _, _ := condition(obj, conditionType)
	return status
}

// condition returns the status of an object's condition (status.conditions) and since when.
func condition(obj *Object, conditionType string) (status string, since time.Time, found bool) {
	c, found := conditionOf(obj, conditionType)
	if !found {
		return "", time.Time{}, false
	}
	status, _ = c["status"].(string)
	since = timeField(c, "lastTransitionTime")
	return status, since, true
}

// conditionOf returns an object's condition (status.conditions) of a type.
func conditionOf(obj *Object, conditionType string) (map[string]any, bool) {
	if obj == nil {
		return nil, false
	}
	conditions, _, _ := unstructured.NestedSlice(obj.Content, "status", "conditions")
	for _, c := range conditions {
		if m, _ := c.(map[string]any); m["type"] == conditionType {
			return m, true
		}
	}
	return nil, false
}

// timeField reads an RFC 3339 time field of a map of an object's content; the zero time if absent
// or malformed.
func timeField(m map[string]any, field string) time.Time {
	s, _ := m[field].(string)
	t, _ := time.Parse(time.RFC3339, s)
	return t
}
