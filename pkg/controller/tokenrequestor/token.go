package tokenrequestor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientcmdlatest "k8s.io/client-go/tools/clientcmd/api/latest"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
)

const (
	// DefaultExpiration is a token's lifetime unless the Secret asks for another.
	DefaultExpiration = 12 * time.Hour
	// maxRenewal caps the lifetime the renewal is computed from: a token is renewed after 80 %
	// of its lifetime, or after a day at the latest.
	maxRenewal = 24 * time.Hour
)

// Relevant says whether a Secret is the token requestor's: labelled with its purpose and, when
// the deployment has a class, with that class.
func Relevant(labels map[string]string, class string) bool {
	return labels[resourcesv1alpha1.ResourceManagerPurpose] == resourcesv1alpha1.LabelPurposeTokenRequest &&
		(class == "" || labels[resourcesv1alpha1.ResourceManagerClass] == class)
}

// Expiration is the lifetime the Secret asks its tokens to have.
func Expiration(secret *corev1.Secret) (time.Duration, error) {
	v, ok := secret.Annotations[resourcesv1alpha1.ServiceAccountTokenExpirationDuration]
	if !ok {
		return DefaultExpiration, nil
	}
	return time.ParseDuration(v)
}

// RenewAfter is when a token that expires at expiration is renewed: after 80 % of its lifetime
// (a day at most), spread by jitter.
func RenewAfter(now, expiration time.Time, jitter func(time.Duration, float64) time.Duration) time.Duration {
	lifetime := min(expiration.UTC().Sub(now.UTC()), maxRenewal)
	return jitter(lifetime*80/100, 0.05)
}

// ServiceAccount is the ServiceAccount in the target the Secret names.
func ServiceAccount(secret *corev1.Secret) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{
		Namespace: secret.Annotations[resourcesv1alpha1.ServiceAccountNamespace],
		Name:      secret.Annotations[resourcesv1alpha1.ServiceAccountName],
	}}
}

// ServiceAccountLabels are the labels the Secret asks its ServiceAccount to have (a JSON object).
func ServiceAccountLabels(secret *corev1.Secret) (map[string]string, error) {
	raw := secret.Annotations[resourcesv1alpha1.ServiceAccountLabels]
	if raw == "" {
		return nil, nil
	}
	labels := map[string]string{}
	if err := json.Unmarshal([]byte(raw), &labels); err != nil {
		return nil, fmt.Errorf("failed unmarshalling service account labels from secret annotation %q (%s): %w", resourcesv1alpha1.ServiceAccountLabels, raw, err)
	}
	return labels, nil
}

// TargetSecret is the Secret in the target the token goes to instead of the source Secret, nil
// unless both its name and namespace are annotated.
func TargetSecret(secret *corev1.Secret) *corev1.Secret {
	name, namespace := secret.Annotations[resourcesv1alpha1.TokenRequestorTargetSecretName], secret.Annotations[resourcesv1alpha1.TokenRequestorTargetSecretNamespace]
	if name == "" || namespace == "" {
		return nil
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
}

// InjectsCA says whether the Secret asks for the target's CA bundle.
func InjectsCA(secret *corev1.Secret) bool {
	inject, _ := strconv.ParseBool(secret.Annotations[resourcesv1alpha1.ServiceAccountInjectCABundle])
	return inject
}

// Token is the token a Secret's data holds: in .data.token, or, with a kubeconfig, that of the
// current context's user.
func Token(data map[string][]byte) (string, error) {
	if _, ok := data[resourcesv1alpha1.DataKeyKubeconfig]; !ok {
		return string(data[resourcesv1alpha1.DataKeyToken]), nil
	}
	kubeconfig, err := decodeKubeconfig(data[resourcesv1alpha1.DataKeyKubeconfig])
	if err != nil {
		return "", err
	}
	user, err := currentUser(kubeconfig)
	if err != nil || user == nil {
		return "", err
	}
	return user.Token, nil
}

// CAUpToDate says whether a Secret's data holds ca as its CA bundle (in bundle.crt, or as the
// current context's cluster's CA).
func CAUpToDate(data map[string][]byte, ca []byte) (bool, error) {
	if _, ok := data[resourcesv1alpha1.DataKeyKubeconfig]; !ok {
		return bytes.Equal(data[resourcesv1alpha1.DataKeyCABundle], ca), nil
	}
	kubeconfig, err := decodeKubeconfig(data[resourcesv1alpha1.DataKeyKubeconfig])
	if err != nil {
		return false, err
	}
	cluster, err := currentCluster(kubeconfig)
	if err != nil {
		return false, err
	}
	return bytes.Equal(cluster.CertificateAuthorityData, ca), nil
}

// Populate writes token (and ca, when given) into data: .data.token and bundle.crt, or into the
// kubeconfig's current user and cluster.
func Populate(data map[string][]byte, token string, ca []byte) error {
	if _, ok := data[resourcesv1alpha1.DataKeyKubeconfig]; !ok {
		data[resourcesv1alpha1.DataKeyToken] = []byte(token)
		if len(ca) > 0 {
			data[resourcesv1alpha1.DataKeyCABundle] = ca
		} else {
			delete(data, resourcesv1alpha1.DataKeyCABundle)
		}
		return nil
	}
	kubeconfig, err := decodeKubeconfig(data[resourcesv1alpha1.DataKeyKubeconfig])
	if err != nil {
		return err
	}
	user, err := currentUser(kubeconfig)
	if err != nil {
		return err
	}
	if user != nil {
		user.Token = token
	}
	if len(ca) > 0 {
		cluster, err := currentCluster(kubeconfig)
		if err != nil {
			return err
		}
		cluster.CertificateAuthorityData = ca
	}
	encoded, err := runtime.Encode(clientcmdlatest.Codec, kubeconfig)
	if err != nil {
		return err
	}
	data[resourcesv1alpha1.DataKeyKubeconfig] = encoded
	return nil
}

// Depopulate removes the token and what goes with it from a source Secret whose token goes to a
// target Secret.
func Depopulate(data map[string][]byte) {
	delete(data, resourcesv1alpha1.DataKeyToken)
	delete(data, resourcesv1alpha1.DataKeyCABundle)
	delete(data, resourcesv1alpha1.DataKeyKubeconfig)
}

func decodeKubeconfig(data []byte) (*clientcmdv1.Config, error) {
	kubeconfig := &clientcmdv1.Config{}
	if _, _, err := clientcmdlatest.Codec.Decode(data, nil, kubeconfig); err != nil {
		return nil, err
	}
	return kubeconfig, nil
}

func currentContext(kubeconfig *clientcmdv1.Config) (clientcmdv1.Context, error) {
	for _, c := range kubeconfig.Contexts {
		if c.Name == kubeconfig.CurrentContext {
			return c.Context, nil
		}
	}
	return clientcmdv1.Context{}, fmt.Errorf("did not find context defined in current context")
}

func currentUser(kubeconfig *clientcmdv1.Config) (*clientcmdv1.AuthInfo, error) {
	ctx, err := currentContext(kubeconfig)
	if err != nil {
		return nil, err
	}
	for i := range kubeconfig.AuthInfos {
		if kubeconfig.AuthInfos[i].Name == ctx.AuthInfo {
			return &kubeconfig.AuthInfos[i].AuthInfo, nil
		}
	}
	return nil, fmt.Errorf("did not find authInfo of current context named %s", ctx.AuthInfo)
}

func currentCluster(kubeconfig *clientcmdv1.Config) (*clientcmdv1.Cluster, error) {
	ctx, err := currentContext(kubeconfig)
	if err != nil {
		return nil, err
	}
	for i := range kubeconfig.Clusters {
		if kubeconfig.Clusters[i].Name == ctx.Cluster {
			return &kubeconfig.Clusters[i].Cluster, nil
		}
	}
	return nil, fmt.Errorf("did not find cluster of current context named %s", ctx.Cluster)
}
