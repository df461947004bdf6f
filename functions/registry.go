// Package functions is the registry: every function's declaration, once. Its subfolders are the
// functions' main packages (each calls function.Main with its declaration). The Knative sources,
// Triggers and RBAC in config/, the local landscape, the docs tables and the test harness are
// all derived from All; a new function costs a folder here and an entry below.
package functions

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/bastion"
	"github.com/gardener-knative/gardener-knative/pkg/controller/certificatesigningrequest"
	"github.com/gardener-knative/gardener-knative/pkg/controller/cloudprofile"
	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerdeployment"
	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerinstallation"
	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerregistration"
	"github.com/gardener-knative/gardener-knative/pkg/controller/credentialsbinding"
	"github.com/gardener-knative/gardener-knative/pkg/controller/csrapprover"
	"github.com/gardener-knative/gardener-knative/pkg/controller/event"
	"github.com/gardener-knative/gardener-knative/pkg/controller/exposureclass"
	"github.com/gardener-knative/gardener-knative/pkg/controller/extension"
	"github.com/gardener-knative/gardener-knative/pkg/controller/garbagecollector"
	"github.com/gardener-knative/gardener-knative/pkg/controller/gardencabundle"
	"github.com/gardener-knative/gardener-knative/pkg/controller/health"
	"github.com/gardener-knative/gardener-knative/pkg/controller/managedresource"
	"github.com/gardener-knative/gardener-knative/pkg/controller/managedseedset"
	"github.com/gardener-knative/gardener-knative/pkg/controller/namespacedcloudprofile"
	"github.com/gardener-knative/gardener-knative/pkg/controller/networkpolicy"
	"github.com/gardener-knative/gardener-knative/pkg/controller/node"
	"github.com/gardener-knative/gardener-knative/pkg/controller/project"
	"github.com/gardener-knative/gardener-knative/pkg/controller/quota"
	"github.com/gardener-knative/gardener-knative/pkg/controller/secretbinding"
	"github.com/gardener-knative/gardener-knative/pkg/controller/seed"
	"github.com/gardener-knative/gardener-knative/pkg/controller/shoot"
	"github.com/gardener-knative/gardener-knative/pkg/controller/shootcabundle"
	"github.com/gardener-knative/gardener-knative/pkg/controller/shootstate"
	"github.com/gardener-knative/gardener-knative/pkg/controller/tokeninvalidator"
	"github.com/gardener-knative/gardener-knative/pkg/controller/tokenrequestor"
	"github.com/gardener-knative/gardener-knative/pkg/controller/webhookcertificates"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

// All lists every function, in the order config/, the landscape and the docs present them.
var All = []*function.Function{
	bastion.Function,
	secretbinding.Function,
	credentialsbinding.Function,
	shoot.Function,
	shootstate.Function,
	seed.Function,
	cloudprofile.Function,
	namespacedcloudprofile.Function,
	controllerdeployment.Function,
	controllerregistration.Function,
	controllerinstallation.Function,
	extension.Function,
	exposureclass.Function,
	quota.Function,
	project.Function,
	event.Function,
	certificatesigningrequest.Function,
	managedseedset.Function,
	managedresource.Function,
	health.Function,
	garbagecollector.Function,
	tokenrequestor.Function,
	tokeninvalidator.Function,
	node.Function,
	csrapprover.Function,
	networkpolicy.Function,
	webhookcertificates.Function,
	shootcabundle.Function,
	gardencabundle.Function,
}

// ByName returns the function with the given name.
func ByName(name string) (*function.Function, bool) {
	for _, fn := range All {
		if fn.Name == name {
			return fn, true
		}
	}
	return nil, false
}
