package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
)

// Decode parses a YAML stream of objects (documents separated by "---").
func Decode(manifests string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifests), 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decode manifests: %w", err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}

// Resource returns the client for obj's kind, in obj's namespace if the kind is namespaced.
func (c *Cluster) Resource(obj *unstructured.Unstructured) (dynamic.ResourceInterface, schema.GroupVersionResource, error) {
	gvk := obj.GroupVersionKind()
	mapping, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		c.Mapper.Reset()
		if mapping, err = c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return nil, schema.GroupVersionResource{}, fmt.Errorf("map %s: %w", gvk, err)
		}
	}
	client := c.Dynamic.Resource(mapping.Resource)
	if obj.GetNamespace() != "" {
		return client.Namespace(obj.GetNamespace()), mapping.Resource, nil
	}
	return client, mapping.Resource, nil
}

// Create creates every object of a YAML stream, in order, and returns them as the server stored
// them. An object with a status is created, then its status is written through the status
// subresource, as its controller would.
func (c *Cluster) Create(ctx context.Context, manifests string) ([]*unstructured.Unstructured, error) {
	objs, err := Decode(manifests)
	if err != nil {
		return nil, err
	}
	created := make([]*unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		client, _, err := c.Resource(obj)
		if err != nil {
			return nil, err
		}
		status, hasStatus := obj.Object["status"]
		out, err := client.Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("create %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
		}
		if hasStatus {
			out.Object["status"] = status
			updated, err := client.UpdateStatus(ctx, out, metav1.UpdateOptions{})
			if err != nil {
				return nil, fmt.Errorf("write status of %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
			}
			out = updated
		}
		created = append(created, out)
	}
	return created, nil
}

// Terminate deletes every object of a YAML stream after creating it, so that objects with
// finalizers are left Terminating, as an uninstalled operator leaves them. It returns the objects
// as they are after the deletion.
func (c *Cluster) Terminate(ctx context.Context, manifests string) ([]*unstructured.Unstructured, error) {
	created, err := c.Create(ctx, manifests)
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(created))
	for _, obj := range created {
		deleted, err := c.Delete(ctx, obj)
		if err != nil {
			return nil, err
		}
		out = append(out, deleted)
	}
	return out, nil
}

// Delete deletes obj and returns it as it is afterwards: Terminating, or nil if it is gone.
func (c *Cluster) Delete(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	client, _, err := c.Resource(obj)
	if err != nil {
		return nil, err
	}
	if err := client.Delete(ctx, obj.GetName(), metav1.DeleteOptions{}); err != nil {
		return nil, fmt.Errorf("delete %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return c.Get(ctx, obj)
}

// Get returns obj as the server has it now, or nil if it does not exist.
func (c *Cluster) Get(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	client, _, err := c.Resource(obj)
	if err != nil {
		return nil, err
	}
	out, err := client.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return out, err
}

// CreateNamespace creates a namespace; one that exists is an error.
func (c *Cluster) CreateNamespace(ctx context.Context, name string) error {
	_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

// EnsureNamespace creates a namespace unless it exists.
func (c *Cluster) EnsureNamespace(ctx context.Context, name string) error {
	if err := c.CreateNamespace(ctx, name); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}
