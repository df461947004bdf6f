package sources

// Bastion feeds the bastion function: Bastion events, Shoot events (a Shoot that is deleted,
// being deleted or moved to another seed takes its Bastions with it) and a resync sweep every
// minute that catches expirations, lifetimes and missed events.
var Bastion = Feed{
	Function: "bastion",
	Mode:     ReferenceMode,
	Resources: []Resource{
		{APIVersion: "operations.gardener.cloud/v1alpha1", Kind: "Bastion", Plural: "bastions"},
		{APIVersion: "core.gardener.cloud/v1beta1", Kind: "Shoot", Plural: "shoots"},
	},
	Pings: []Ping{{Sweep: "resync", Schedule: "* * * * *"}},
}
