package formula_test

import (
	"errors"
	"fmt"

	"github.com/openbdp/bdp/pipeline/formula"
)

func Example() {
	p, err := formula.Compile("a = P1 + P2; if(a > 20, a x 2, null);", []string{"P1", "P2"})
	if err != nil {
		panic(err)
	}
	for _, values := range [][]float64{{12.5, 9}, {1, 2}} {
		v, ok, err := p.Eval(values)
		switch {
		case err != nil:
			fmt.Println("error:", err)
		case !ok:
			fmt.Println("null: emit nothing")
		default:
			fmt.Println(v)
		}
	}
	// Output:
	// 43
	// null: emit nothing
}

func ExampleSyntaxError() {
	_, err := formula.Compile("a = P1 +;\nmax(a, P2)", []string{"P1", "P2"})
	var se *formula.SyntaxError
	if errors.As(err, &se) {
		fmt.Println(se.Line, se.Col, se.Msg)
	}
	fmt.Println(err)
	// Output:
	// 1 9 unexpected ";"
	// formula: 1:9: unexpected ";"
}

func ExampleRuntimeError() {
	p, _ := formula.Compile("P1 / P2", []string{"P1", "P2"})
	_, _, err := p.Eval([]float64{1, 0})
	fmt.Println(err, errors.Is(err, formula.ErrDivisionByZero))
	// Output:
	// formula: 1:4: division by zero true
}
