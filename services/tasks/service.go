// Package tasks is the tasks service: it owns agent tasks, attempts, the task graph, jobs and worker leases (DESIGN §2).
//
// Its RPCs are built by the issue that owns the service; until then they
// answer Unimplemented (the embedded Unimplemented server).
package tasks

import (
	"google.golang.org/grpc"

	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/services/kit"
)

// Name is the service's name in `agentruntime serve <name>`.
const Name = "tasks"

// HealthName is the grpc.health.v1 service name probes ask for.
var HealthName = tasksv1.TasksService_ServiceDesc.ServiceName

// Service implements tasksv1.TasksServiceServer.
type Service struct {
	tasksv1.UnimplementedTasksServiceServer
	deps kit.Deps
}

// New builds the service on its dependencies.
func New(deps kit.Deps) *Service { return &Service{deps: deps} }

// Name implements kit.Service.
func (s *Service) Name() string { return Name }

// HealthName implements kit.Service.
func (s *Service) HealthName() string { return HealthName }

// Register implements kit.Service.
func (s *Service) Register(g *grpc.Server) { tasksv1.RegisterTasksServiceServer(g, s) }
