package sandbox

import (
	"errors"
	"strings"
)

// Error kinds callers branch on with errors.Is.
var (
	// ErrEngineUnavailable: the Docker engine did not answer.
	ErrEngineUnavailable = errors.New("docker engine unavailable")
	// ErrImageNotFound: the image is not present locally (nothing is pulled).
	ErrImageNotFound = errors.New("sandbox image not found")
	// ErrContainerGone: the container no longer exists (closed, killed at a
	// timeout, canceled, or past its deadline); the job cannot continue in it.
	ErrContainerGone = errors.New("sandbox container is gone")
	// ErrNetworkAttached: changes may only be copied in after DropNetwork.
	ErrNetworkAttached = errors.New("sandbox still has a network; call DropNetwork first")
	// ErrNetworkNotDropped: after disconnecting, an interface other than lo remained.
	ErrNetworkNotDropped = errors.New("sandbox network could not be dropped")
	// ErrInvalid: a Spec, Cmd, path or Options value is not acceptable.
	ErrInvalid = errors.New("invalid sandbox request")
	// ErrEngineWarning: the engine warned on create (for example a limit it
	// dropped); the job must not run with weaker limits than configured.
	ErrEngineWarning = errors.New("docker engine warned on container create")
)

// WarningError carries the warnings the engine returned when creating a
// container. It matches ErrEngineWarning with errors.Is.
type WarningError struct {
	Warnings []string
}

func (e *WarningError) Error() string {
	return "docker engine warned on container create: " + strings.Join(e.Warnings, "; ")
}

// Is reports whether target is ErrEngineWarning.
func (e *WarningError) Is(target error) bool { return target == ErrEngineWarning }
