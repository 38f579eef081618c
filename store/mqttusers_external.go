package store

import (
	"context"
	"strconv"
)

// What the external broker's sync (mqtt.External) reads beyond the MQTT
// user API: every user of every project, and one by id alone, as a
// change notice names it.

// AllMQTTUsers lists the unexpired MQTT users of every project, by id.
func (s *Store) AllMQTTUsers(ctx context.Context) ([]MQTTUser, error) {
	us, err := scanMQTTUsers(s.pool.Query(ctx, `
		WITH m AS (SELECT * FROM mqtt_users WHERE `+mqttUserVisible+`) `+mqttUserSelect+`
		ORDER BY m.id`))
	return us, translate(err, "MQTT users")
}

// MQTTUserByID returns the unexpired MQTT user with that id, of any
// project; fault.NotFound when there is none.
func (s *Store) MQTTUserByID(ctx context.Context, id int64) (MQTTUser, error) {
	u, err := scanMQTTUser(s.pool.QueryRow(ctx, `
		WITH m AS (SELECT * FROM mqtt_users WHERE id = $1 AND `+mqttUserVisible+`) `+mqttUserSelect, id))
	return u, translate(err, "MQTT user "+strconv.FormatInt(id, 10))
}
