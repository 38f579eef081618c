package http

import "context"

// startCredentialsListener makes the caches follow password changes made
// by another process on the same database (`bdp admin reset-password`):
// PostgreSQL tells, and the user's cached credentials and roles are
// dropped at once, so the old password and the tokens issued with it stop
// working then, not when the caches expire. The returned func stops it.
func (s *Server) startCredentialsListener() func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.store.ListenCredentialsChanged(ctx, func(userID int64) {
			if userID == 0 {
				s.creds.DropAll()
			} else {
				s.creds.DropUser(userID)
			}
			s.authz.invalidate()
		})
	}()
	return func() { cancel(); <-done }
}
