package kube

import "wsgilab/bench/internal/engine"

// Tables are labkube render's -table values: which of a profile's
// conditions render, and how many runs each.
var Tables = map[string]func(engine.Plan) ([]engine.Condition, func(engine.Condition) int){
	"a": func(p engine.Plan) ([]engine.Condition, func(engine.Condition) int) {
		return p.Conditions, func(c engine.Condition) int { return c.Runs(engine.DefaultRuns) }
	},
	"sweep": func(p engine.Plan) ([]engine.Condition, func(engine.Condition) int) {
		return p.Sweep, fixed(p.SweepRuns)
	},
	"matrix": func(p engine.Plan) ([]engine.Condition, func(engine.Condition) int) {
		return p.Matrix, fixed(p.MatrixRuns)
	},
	"stream": func(p engine.Plan) ([]engine.Condition, func(engine.Condition) int) {
		return p.Streams, fixed(p.StreamRuns)
	},
	"exhaustion": func(p engine.Plan) ([]engine.Condition, func(engine.Condition) int) {
		return p.Exhaustion, fixed(p.ExhaustionRuns)
	},
}

func fixed(n int) func(engine.Condition) int { return func(engine.Condition) int { return n } }
