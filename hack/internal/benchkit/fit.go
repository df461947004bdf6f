package benchkit

import "errors"

// Line is cost = a + b·N, fitted by least squares.
type Line struct{ A, B float64 }

// Fit fits a line through (ns[i], ys[i]); it needs two distinct sizes.
func Fit(ns []int, ys []float64) (Line, error) {
	if len(ns) != len(ys) {
		return Line{}, errors.New("as many sizes as figures")
	}
	var sn, sy, snn, sny float64
	for i, n := range ns {
		x := float64(n)
		sn += x
		sy += ys[i]
		snn += x * x
		sny += x * ys[i]
	}
	k := float64(len(ns))
	den := k*snn - sn*sn
	if len(ns) < 2 || den == 0 {
		return Line{}, errors.New("a fit needs two sizes of N at least")
	}
	b := (k*sny - sn*sy) / den
	return Line{A: (sy - b*sn) / k, B: b}, nil
}

func (l Line) At(n int) float64 { return l.A + l.B*float64(n) }
