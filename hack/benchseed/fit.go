package main

import "errors"

// line is cost = a + b·N, fitted by least squares.
type line struct{ a, b float64 }

// fit fits a line through (ns[i], ys[i]); it needs two distinct sizes.
func fit(ns []int, ys []float64) (line, error) {
	if len(ns) != len(ys) {
		return line{}, errors.New("as many sizes as figures")
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
		return line{}, errors.New("a fit needs two sizes of N at least")
	}
	b := (k*sny - sn*sy) / den
	return line{a: (sy - b*sn) / k, b: b}, nil
}

func (l line) at(n int) float64 { return l.a + l.b*float64(n) }
