package http

import (
	"context"

	"github.com/openbdp/bdp/controls"
)

// checkControlsAttribute refuses an attribute value a controls app's run
// would refuse (controls.CheckAttributes), judged with the component's
// other attributes as they are: the mistake is named when it is made, not
// at the next run.
func (s *Server) checkControlsAttribute(ctx context.Context, projectID, cipID int64, key, value string) error {
	cip, err := s.store.ComponentInProject(ctx, projectID, cipID)
	if err != nil {
		return err
	}
	comp, _ := s.components.Component(cip.ComponentID)
	attrs := map[string]string{key: value}
	for _, def := range comp.Attributes {
		if v, ok := cip.Attributes[def.ID]; ok && def.Key != key {
			attrs[def.Key] = v
		}
	}
	return controls.CheckAttributes(attrs)
}
