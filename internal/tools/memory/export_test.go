package memory

import "context"

// RebuildIndex loads s's stored vectors into its index, as RunVectors does
// on start, and waits until the index's inverted files are trained.
func RebuildIndex(ctx context.Context, s *Service) error {
	if err := s.vec.rebuild(ctx); err != nil {
		return err
	}
	s.vec.index.Settle()
	return nil
}

// Indexed reports whether s's index holds a vector of the tenant's memory.
func Indexed(s *Service, tenant, id string) bool {
	_, ok := s.vec.index.Vector(tenant, id)
	return ok
}
