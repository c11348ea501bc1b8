package k8s

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/openapi"
)

// strictDecoder refuses unknown and duplicate fields: a misspelt key would
// otherwise be dropped by the API server without a word, and the setting it
// meant to make silently missing.
// It knows client-go's types and the Gateway API's (the front door).
var strictDecoder = serializer.NewCodecFactory(decodeScheme(), serializer.EnableStrict).UniversalDeserializer()

func decodeScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(scheme.AddToScheme(s))
	utilruntime.Must(gatewayv1.Install(s))
	return s
}

// cluster is one rendered overlay: every object kustomize emits, decoded
// into client-go's types.
type cluster struct {
	objects []object
	// yaml is the whole rendering, as `kubectl kustomize` would print it.
	yaml func() ([]byte, error)
	// certificates are the cert-manager Certificates, which client-go's
	// scheme does not know (certificate).
	certificates []certificate
}

// certificate is the part of cert-manager's Certificate (cert-manager.io/v1)
// the manifests use; decoding refuses any other field, as strictDecoder does.
type certificate struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		SecretName string   `json:"secretName"`
		DNSNames   []string `json:"dnsNames"`
		IssuerRef  struct {
			Group string `json:"group"`
			Kind  string `json:"kind"`
			Name  string `json:"name"`
		} `json:"issuerRef"`
		PrivateKey struct {
			Algorithm      string `json:"algorithm"`
			Size           int    `json:"size"`
			RotationPolicy string `json:"rotationPolicy"`
		} `json:"privateKey"`
		Duration    string `json:"duration"`
		RenewBefore string `json:"renewBefore"`
	} `json:"spec"`
}

func decodeCertificate(data []byte) (certificate, error) {
	var c certificate
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	return c, d.Decode(&c)
}

type object struct {
	kind      string
	name      string
	namespace string
	obj       runtime.Object
}

func (o object) String() string { return o.kind + "/" + o.name }

// render builds the kustomization in dir and strictly decodes what it
// emits. Every object that does not decode is reported; the ones that do
// are returned, so the rules can still be applied to the rest.
func render(dir string) (*cluster, error) {
	warmSchema()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resources, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", filepath.Base(dir), err)
	}
	c := &cluster{yaml: sync.OnceValues(resources.AsYaml)}
	var errs []error
	for _, r := range resources.Resources() {
		id := r.GetKind() + "/" + r.GetName()
		// JSON: what kubectl sends, and much cheaper to decode than YAML.
		data, err := r.MarshalJSON()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
			continue
		}
		if r.GetKind() == "Certificate" && r.GetApiVersion() == "cert-manager.io/v1" {
			cert, err := decodeCertificate(data)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", id, err))
				continue
			}
			c.certificates = append(c.certificates, cert)
			continue
		}
		obj, _, err := strictDecoder.Decode(data, nil, nil)
		if err != nil {
			// Strict errors come with a decoded object; it is still wrong.
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
			continue
		}
		c.objects = append(c.objects, object{kind: r.GetKind(), name: r.GetName(), namespace: r.GetNamespace(), obj: obj})
	}
	return c, errors.Join(errs...)
}

// rendered returns the repository's overlay, rendered once per test
// binary: the rules only read it.
func rendered(overlay string) (*cluster, error) { return renderedOverlays[overlay]() }

var renderedOverlays = map[string]func() (*cluster, error){
	"dev":  sync.OnceValues(func() (*cluster, error) { return render(overlayDir(".", "dev")) }),
	"prod": sync.OnceValues(func() (*cluster, error) { return render(overlayDir(".", "prod")) }),
}

// warmSchema parses kyaml's built-in OpenAPI schema once. kyaml does it
// lazily into package globals, and readers on other goroutines race with
// that first parse; tests render overlays in parallel.
var warmSchema = sync.OnceFunc(func() { openapi.Schema() })

// workload is anything that runs pods from a template.
type workload struct {
	object
	replicas *int32
	selector *metav1.LabelSelector
	template corev1.PodTemplateSpec
	// claims are a StatefulSet's volumeClaimTemplates: volumes too.
	claims []corev1.PersistentVolumeClaim
}

// effectiveReplicas is the count the workload runs with when nothing
// scales it: an unset field means one.
func (w workload) effectiveReplicas() int32 {
	if w.replicas == nil {
		return 1
	}
	return *w.replicas
}

func (w workload) container(name string) *corev1.Container {
	for i := range w.template.Spec.Containers {
		if w.template.Spec.Containers[i].Name == name {
			return &w.template.Spec.Containers[i]
		}
	}
	return nil
}

func (c *cluster) workloads() []workload {
	var out []workload
	for _, o := range c.objects {
		switch v := o.obj.(type) {
		case *appsv1.Deployment:
			out = append(out, workload{object: o, replicas: v.Spec.Replicas, selector: v.Spec.Selector, template: v.Spec.Template})
		case *appsv1.StatefulSet:
			out = append(out, workload{object: o, replicas: v.Spec.Replicas, selector: v.Spec.Selector, template: v.Spec.Template, claims: v.Spec.VolumeClaimTemplates})
		case *appsv1.DaemonSet:
			out = append(out, workload{object: o, selector: v.Spec.Selector, template: v.Spec.Template})
		}
	}
	return out
}

func (c *cluster) workload(kind, name string) (workload, bool) {
	i := slices.IndexFunc(c.workloads(), func(w workload) bool { return w.kind == kind && w.name == name })
	if i < 0 {
		return workload{}, false
	}
	return c.workloads()[i], true
}

// find returns the objects of one Go type, e.g. find[*corev1.Service](c).
func find[T runtime.Object](c *cluster) []T {
	var out []T
	for _, o := range c.objects {
		if v, ok := o.obj.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// named returns the object of type T with the given name.
func named[T interface {
	runtime.Object
	GetName() string
}](c *cluster, name string) (T, bool) {
	for _, v := range find[T](c) {
		if v.GetName() == name {
			return v, true
		}
	}
	var zero T
	return zero, false
}
