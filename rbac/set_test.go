package rbac

import (
	"slices"
	"testing"
)

func setOf(ids ...int32) Set {
	var s Set
	for _, id := range ids {
		s = s.With(id)
	}
	return s
}

func TestSetHas(t *testing.T) {
	s := setOf(0, 1, 63, 64, 65, 127, 128, 1000)
	tests := []struct {
		id   int32
		want bool
	}{
		{0, true}, {1, true}, {2, false}, {62, false}, {63, true}, {64, true}, {65, true},
		{66, false}, {127, true}, {128, true}, {129, false}, {999, false}, {1000, true},
		{1001, false}, {5000, false}, {-1, false}, {-64, false}, {-65, false}, {-2147483648, false},
	}
	for _, tt := range tests {
		if got := s.Has(tt.id); got != tt.want {
			t.Errorf("Has(%d) = %v, want %v", tt.id, got, tt.want)
		}
	}
	var empty Set
	for _, id := range []int32{-1, 0, 1, 64, 1 << 20} {
		if empty.Has(id) {
			t.Errorf("empty set Has(%d)", id)
		}
	}
}

func TestSetWith(t *testing.T) {
	tests := []struct {
		name string
		base Set
		add  int32
		want []int32
	}{
		{"into empty", nil, 5, []int32{5}},
		{"zero", nil, 0, []int32{0}},
		{"last bit of the first word", setOf(1), 63, []int32{1, 63}},
		{"first bit of the second word", setOf(1), 64, []int32{1, 64}},
		{"far away", setOf(3), 700, []int32{3, 700}},
		{"already there", setOf(3, 70), 70, []int32{3, 70}},
		{"negative is ignored", setOf(3), -1, []int32{3}},
		{"very negative is ignored", setOf(3), -1000, []int32{3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(tt.base)
			got := tt.base.With(tt.add).IDs()
			if !slices.Equal(got, tt.want) {
				t.Fatalf("IDs = %v, want %v", got, tt.want)
			}
			if !slices.Equal(tt.base, before) {
				t.Fatalf("With modified its receiver: %v -> %v", before, tt.base)
			}
		})
	}
}

func TestSetUnionMinus(t *testing.T) {
	tests := []struct {
		name        string
		a, b        Set
		union, diff []int32
	}{
		{"both empty", nil, nil, []int32{}, []int32{}},
		{"empty left", nil, setOf(1, 70), []int32{1, 70}, []int32{}},
		{"empty right", setOf(1, 70), nil, []int32{1, 70}, []int32{1, 70}},
		{"overlap", setOf(1, 2, 3), setOf(2, 3, 4), []int32{1, 2, 3, 4}, []int32{1}},
		{"longer right", setOf(1, 2), setOf(2, 200), []int32{1, 2, 200}, []int32{1}},
		{"longer left", setOf(1, 64, 200), setOf(64), []int32{1, 64, 200}, []int32{1, 200}},
		{"disjoint words", setOf(0, 63), setOf(64, 127), []int32{0, 63, 64, 127}, []int32{0, 63}},
		{"equal", setOf(5, 65, 129), setOf(5, 65, 129), []int32{5, 65, 129}, []int32{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a0, b0 := slices.Clone(tt.a), slices.Clone(tt.b)
			if got := tt.a.Union(tt.b).IDs(); !slices.Equal(got, tt.union) {
				t.Errorf("Union = %v, want %v", got, tt.union)
			}
			if got := tt.b.Union(tt.a).IDs(); !slices.Equal(got, tt.union) {
				t.Errorf("Union (swapped) = %v, want %v", got, tt.union)
			}
			if got := tt.a.Minus(tt.b).IDs(); !slices.Equal(got, tt.diff) {
				t.Errorf("Minus = %v, want %v", got, tt.diff)
			}
			if !slices.Equal(tt.a, a0) || !slices.Equal(tt.b, b0) {
				t.Errorf("Union/Minus modified an operand")
			}
		})
	}
}

func TestSetIDsAscending(t *testing.T) {
	in := []int32{900, 3, 64, 0, 63, 128, 65, 3, 511, 512}
	got := setOf(in...).IDs()
	want := []int32{0, 3, 63, 64, 65, 128, 511, 512, 900}
	if !slices.Equal(got, want) {
		t.Fatalf("IDs = %v, want %v", got, want)
	}
	if got := Set(nil).IDs(); got == nil || len(got) != 0 {
		t.Fatalf("IDs of the empty set = %#v, want an empty non-nil slice", got)
	}
}
