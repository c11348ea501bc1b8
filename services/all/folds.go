package all

import (
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/services/control"
	controlreadmodel "github.com/agentruntime/agentruntime/services/control/readmodel"
	"github.com/agentruntime/agentruntime/services/evidence"
	evidencereadmodel "github.com/agentruntime/agentruntime/services/evidence/readmodel"
	"github.com/agentruntime/agentruntime/services/permission"
	permissionreadmodel "github.com/agentruntime/agentruntime/services/permission/readmodel"
	"github.com/agentruntime/agentruntime/services/routing"
	routingreadmodel "github.com/agentruntime/agentruntime/services/routing/readmodel"
	"github.com/agentruntime/agentruntime/services/tasks"
	tasksreadmodel "github.com/agentruntime/agentruntime/services/tasks/readmodel"
)

// Folds are each service's projections with their fold versions, without
// building the service: what names the generation of its store
// (Generation) and what `agentruntime version` lists. TestFoldsAreWhatTheServicesRun
// holds them to each service's kit.Projector.
var Folds = map[string][]projection.Fold{
	control.Name: {
		{Name: controlreadmodel.Name, Version: controlreadmodel.FoldVersion},
		{Name: controlreadmodel.ClaimsName, Version: controlreadmodel.ClaimsFoldVersion},
		{Name: controlreadmodel.WebhooksName, Version: controlreadmodel.WebhooksFoldVersion},
	},
	tasks.Name: {
		{Name: tasksreadmodel.Name, Version: tasksreadmodel.FoldVersion},
		{Name: tasksreadmodel.TurnEndsName, Version: tasksreadmodel.TurnEndsFoldVersion},
	},
	routing.Name:    {{Name: routingreadmodel.Name, Version: routingreadmodel.FoldVersion}},
	permission.Name: {{Name: permissionreadmodel.Name, Version: permissionreadmodel.FoldVersion}},
	evidence.Name:   {{Name: evidencereadmodel.Name, Version: evidencereadmodel.FoldVersion}},
}

// Generation is the generation of the named service's store: its
// projections' fold versions together (docs/upgrading.md).
func Generation(service string) projection.Generation {
	return projection.NewGeneration(Folds[service]...)
}
