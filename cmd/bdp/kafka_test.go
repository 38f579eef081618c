package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"

	"github.com/openbdp/bdp/pipeline/kafkatest"
	"github.com/openbdp/bdp/store/pgcluster"
)

// kafkaPlatform is bdp serve consuming a fresh topic of the test broker,
// on a database the test can query directly.
type kafkaPlatform struct {
	t       *testing.T
	topic   string
	dbURL   string
	dataDir string
	env     []string
	project int64
}

func newKafkaPlatform(t *testing.T, partitions int) *kafkaPlatform {
	brokers := kafkatest.Brokers(t)
	cl, stop, err := pgcluster.StartForTests(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	k := &kafkaPlatform{t: t, topic: kafkatest.Topic(t, partitions), dbURL: cl.URL(), dataDir: newDataDir(t)}
	// BDP_SEAL_GRACE=off: the observations lie in closed weeks, which
	// the sealer would move into chunks, and stored counts rows in SQL
	// (sealing is tested in store and store/sealer).
	k.env = []string{"BDP_DATABASE_URL=" + k.dbURL, "BDP_KAFKA_BROKERS=" + strings.Join(brokers, ","),
		"BDP_KAFKA_TOPIC=" + k.topic, "BDP_KAFKA_GROUP=" + k.topic + "-group", "BDP_SEAL_GRACE=off"}
	return k
}

func (k *kafkaPlatform) start() *server { return startServe(k.t, k.dataDir, k.env...) }

// createProject makes the company and project the observations belong to.
func (k *kafkaPlatform) createProject(s *server) {
	k.project = companyProject(k.t, s, "kafka", "k@kafka.test", "kafka-pw-1")
}

// stored returns the number and the sum of the stored observations.
func (k *kafkaPlatform) stored() (int64, float64) {
	k.t.Helper()
	conn, err := pgx.Connect(context.Background(), k.dbURL)
	if err != nil {
		k.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int64
	var sum float64
	if err := conn.QueryRow(context.Background(), `SELECT count(*), COALESCE(sum(value), 0) FROM observations`).Scan(&n, &sum); err != nil {
		k.t.Fatal(err)
	}
	return n, sum
}

// waitStored polls until n observations are stored or the timeout passes.
func (k *kafkaPlatform) waitStored(n int64, timeout time.Duration) (int64, float64) {
	k.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got, sum := k.stored()
		if got >= n || time.Now().After(deadline) {
			return got, sum
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func obsMessage(project int64, dp string, at time.Time, values ...float64) kafka.Message {
	arr := make([]map[string]any, len(values))
	for i, v := range values {
		arr[i] = map[string]any{"project_id": project, "dataPointID": dp, "time": at.Add(time.Duration(i) * time.Second).Format(time.RFC3339Nano), "value": v}
	}
	b, _ := json.Marshal(arr)
	return kafka.Message{Key: []byte(fmt.Sprintf("%d/%s", project, dp)), Value: b}
}

// Produced observations are stored; a poison message goes to the DLQ with
// its reason while the messages after it are still stored.
func TestKafkaIngestStoresAndDeadLetters(t *testing.T) {
	k := newKafkaPlatform(t, 2)
	s := k.start()
	k.createProject(s)
	at := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	kafkatest.Produce(t, k.topic,
		obsMessage(k.project, "a", at, 1, 2, 3),
		kafka.Message{Key: []byte("poison"), Value: []byte(`{"project_id": ` + fmt.Sprint(k.project) + `, "dataPointID": "a", "time": "not a time", "value": 1}`)},
		kafka.Message{Key: []byte("poison"), Value: []byte(`{"project_id": 999999, "dataPointID": "a", "time": "2026-04-01T00:00:00Z", "value": 1}`)},
		obsMessage(k.project, "b", at, 10, 20),
	)
	if n, sum := k.waitStored(5, 30*time.Second); n != 5 || sum != 36 {
		t.Fatalf("stored %d observations summing to %v; want 5 and 36\n%s", n, sum, s.log)
	}
	dlq := kafkatest.Consume(t, k.topic+".dlq", 2, 30*time.Second)
	reasons := ""
	for _, m := range dlq {
		for _, h := range m.Headers {
			if h.Key == "bdp-error" {
				reasons += string(h.Value) + "\n"
			}
		}
	}
	if !strings.Contains(reasons, "time") || !strings.Contains(reasons, "999999") {
		t.Fatalf("DLQ reasons do not explain the refusals:\n%s", reasons)
	}
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}

// Nothing acknowledged is lost: kill -9 bdp in the middle of ingesting
// 1,000,000 observations, start it again, and every produced observation
// is stored exactly once.
func TestKafkaIngestSurvivesKill9(t *testing.T) {
	k := newKafkaPlatform(t, 4)
	s := k.start()
	k.createProject(s)
	const messages, perMessage = 20_000, 50
	at := time.Date(2026, 5, 4, 0, 0, 0, 0, time.UTC)
	msgs := make([]kafka.Message, 0, messages)
	var wantSum float64
	for m := 0; m < messages; m++ {
		values := make([]float64, perMessage)
		for i := range values {
			values[i] = float64((m*perMessage+i)%1000) / 8
			wantSum += values[i]
		}
		// 1,000 datapoints; each message continues its datapoint's series.
		dp := fmt.Sprintf("dp%04d", m%1000)
		msgs = append(msgs, obsMessage(k.project, dp, at.Add(time.Duration(m/1000*perMessage)*time.Second), values...))
	}
	const total = messages * perMessage
	kafkatest.Produce(t, k.topic, msgs...) // consumption starts meanwhile

	// Kill once a part is stored, mid-stream.
	if n, _ := k.waitStored(total/5, 2*time.Minute); n >= total {
		t.Fatalf("everything was stored before the kill (%d); the test proves nothing", n)
	}
	_ = s.stop(syscall.SIGKILL)
	before, _ := k.stored()

	s = k.start()
	n, sum := k.waitStored(total, 3*time.Minute)
	if n != total || sum != wantSum {
		t.Fatalf("after kill -9 at %d stored: %d observations summing to %v; want %d summing to %v", before, n, sum, total, wantSum)
	}
	t.Logf("killed with %d of %d stored; all %d stored exactly once after the restart", before, total, total)
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}

// Two nodes in one consumer group; one is killed with kill -9. Its
// partitions move to the other within seconds (the session time-out),
// not after kafka-go's default 30 s: what is produced after the kill is
// all stored within 15 s.
func TestKafkaIngestMovesADeadNodesPartitionsWithinSeconds(t *testing.T) {
	k := newKafkaPlatform(t, 4)
	s1 := k.start()
	k.createProject(s1)
	s2 := startServe(t, newDataDir(t), k.env...)
	client := &kafka.Client{Addr: kafka.TCP(kafkatest.Brokers(t)...)}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		res, err := client.DescribeGroups(context.Background(), &kafka.DescribeGroupsRequest{GroupIDs: []string{k.topic + "-group"}})
		if err == nil && len(res.Groups) == 1 && res.Groups[0].GroupState == "Stable" && len(res.Groups[0].Members) == 2 &&
			assigned(res.Groups[0].Members[0]) && assigned(res.Groups[0].Members[1]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the two nodes did not both join the consumer group: %+v %v", res, err)
		}
	}
	_ = s2.stop(syscall.SIGKILL)
	killed := time.Now()
	at := time.Date(2026, 5, 5, 0, 0, 0, 0, time.UTC)
	var msgs []kafka.Message
	for m := range 40 { // 40 datapoints: every partition gets some
		msgs = append(msgs, obsMessage(k.project, fmt.Sprintf("dp%02d", m), at, 1, 2, 3))
	}
	kafkatest.Produce(t, k.topic, msgs...)
	n, _ := k.waitStored(120, 30*time.Second)
	took := time.Since(killed)
	if n != 120 || took > 15*time.Second {
		t.Fatalf("%d of 120 observations stored %s after the kill; want all within 15 s", n, took.Round(100*time.Millisecond))
	}
	t.Logf("all stored %s after the kill", took.Round(100*time.Millisecond))
}

// assigned tells whether a group member holds a partition.
func assigned(m kafka.DescribeGroupsResponseMember) bool {
	for _, tp := range m.MemberAssignments.Topics {
		if len(tp.Partitions) > 0 {
			return true
		}
	}
	return false
}
