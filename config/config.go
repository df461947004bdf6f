// Package config holds, for the project's commands, the manifests of config/ that are applied
// per shoot rather than by `ko apply -f config/<part>/`: the templates of each shoot's webhook
// registrations (shoot/, shoot-opt-in/ and their scale-to-zero variant) and of its
// kube-apiserver's authorization webhook kubeconfig. pkg/enrolment renders them for one tenant.
// (ko and kubectl read only the YAML files of this folder.)
package config

import "embed"

// Shoot holds shoot/, shoot-opt-in/ and their scale-to-zero variants.
//
//go:embed shoot/*.yaml shoot/authorization-webhook.kubeconfig.example shoot-opt-in/*.yaml scale-to-zero/shoot/*.yaml scale-to-zero/shoot-opt-in/*.yaml
var Shoot embed.FS
