package edge

// CrashConnection makes a project's connection actor panic (a request
// whose follower's channel is closed), as a bug would, to test its
// supervision.
func (m *Manager) CrashConnection(projectID int64) {
	m.mu.Lock()
	c := m.conns[projectID]
	m.mu.Unlock()
	events := make(chan event)
	close(events)
	m.system.Root.Send(c.pid, &requestMsg{req: Request{Reference: newReference(), Operation: OpPing},
		deadline: m.cfg.Now().Add(m.cfg.OperationTimeout), events: events})
}
