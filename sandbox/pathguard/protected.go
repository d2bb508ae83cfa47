package pathguard

import (
	"fmt"

	"github.com/custos-dev/custos/protected"
)

// ProtectedError is the path guard's refusal of a protected path. It is
// ErrProtectedPath for errors.Is, and its message names the rule so the
// model can tell the user what it could not do.
type ProtectedError struct {
	Path string
	Rule protected.Rule
}

func (e *ProtectedError) Error() string {
	return fmt.Sprintf("%s: %s (%s: %s)", e.Path, ErrProtectedPath, e.Rule.Name, e.Rule.Why)
}

func (e *ProtectedError) Is(target error) bool { return target == ErrProtectedPath }
