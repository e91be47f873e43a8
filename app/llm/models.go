package llm

import (
	"context"
	"fmt"
	"slices"
)

// ListModels asks the endpoint which models it serves (GET /models), once,
// without retries: `selfcode doctor` uses it to check the configured names.
// Errors carry the same kinds as Chat's (ErrUnauthorized, ErrConnection, a
// *StatusError with the status, …).
func (c *Client) ListModels(ctx context.Context) ([]string, error) {
	list, err := c.api.ListModels(context.WithValue(ctx, attemptKey{}, &attemptInfo{}))
	if err != nil {
		_, kerr := classify(err, &attemptInfo{})
		return nil, fmt.Errorf("list models: %w", kerr)
	}
	names := make([]string, 0, len(list.Models))
	for _, m := range list.Models {
		names = append(names, m.ID)
	}
	slices.Sort(names)
	return names, nil
}
