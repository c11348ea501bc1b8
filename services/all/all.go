// Package all is the list of the five services, for the binary's composition
// root: `agentruntime dev` runs all of them, `agentruntime serve` one.
package all

import (
	"fmt"
	"strings"

	"github.com/agentruntime/agentruntime/services/control"
	"github.com/agentruntime/agentruntime/services/evidence"
	"github.com/agentruntime/agentruntime/services/kit"
	"github.com/agentruntime/agentruntime/services/permission"
	"github.com/agentruntime/agentruntime/services/routing"
	"github.com/agentruntime/agentruntime/services/tasks"
)

// Names of the services in a stable order.
var Names = []string{control.Name, tasks.Name, routing.Name, permission.Name, evidence.Name}

var constructors = map[string]func(kit.Deps) kit.Service{
	control.Name:    func(d kit.Deps) kit.Service { return control.New(d) },
	tasks.Name:      func(d kit.Deps) kit.Service { return tasks.New(d) },
	routing.Name:    func(d kit.Deps) kit.Service { return routing.New(d) },
	permission.Name: func(d kit.Deps) kit.Service { return permission.New(d) },
	evidence.Name:   func(d kit.Deps) kit.Service { return evidence.New(d) },
}

// New builds the named service.
func New(name string, deps kit.Deps) (kit.Service, error) {
	c, ok := constructors[name]
	if !ok {
		return nil, fmt.Errorf("unknown service %q (want one of %s)", name, strings.Join(Names, ", "))
	}
	return c(deps), nil
}
