package pipeline

import "github.com/openbdp/bdp/codec"

// kafkaDecoder turns one message value into observations through codec's
// decoder of the gateway JSON. It reuses one slice for the decoded form,
// so a message costs no allocation beyond its dataPointIDs.
type kafkaDecoder struct {
	decoded []codec.KafkaObservation
}

// decode appends the observations of one message value to dst. On error
// it returns the kind (KafkaMalformed or KafkaInvalid) and dst as it was.
func (d *kafkaDecoder) decode(value []byte, dst []Observation) ([]Observation, string, error) {
	var refusal codec.Refusal
	var err error
	d.decoded, refusal, err = codec.DecodeKafka(value, d.decoded[:0])
	if err != nil {
		return dst, string(refusal), err
	}
	for _, o := range d.decoded {
		dst = append(dst, Observation(o))
	}
	return dst, "", nil
}
