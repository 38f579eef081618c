package http

import (
	"context"

	"github.com/openbdp/bdp/store"
)

// startCredentialsListener makes the caches follow changes to users and
// roles committed by any process on the same database (another bdp serve,
// `bdp admin reset-password`): PostgreSQL tells, and the user's cached
// credentials and everyone's cached roles are dropped at once, so an old
// password, the tokens issued with it and a withdrawn role stop working
// then, not when the caches expire. A project deleted through another
// server is forgotten here too: its access and its datapoints' ids. The
// returned func stops it.
func (s *Server) startCredentialsListener() func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.store.ListenCredentialsChanged(ctx, func(ch store.AccessChange) {
			switch {
			case ch.Roles:
			case ch.ProjectID != 0:
				s.authz.forgetProject(ch.ProjectID)
				s.ingest.ForgetProject(ch.ProjectID)
			case ch.UserID == 0:
				s.creds.DropAll()
			default:
				s.creds.DropUser(ch.UserID)
			}
			s.authz.invalidate()
		})
	}()
	return func() { cancel(); <-done }
}
