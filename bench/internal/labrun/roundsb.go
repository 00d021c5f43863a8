package labrun

import (
	"fmt"
	"slices"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/stack"
	"wsgilab/bench/internal/verdict"
)

// RoundsB measures the cells of servers at blocking ms block together, in
// rounds, so that their rates can be compared with each other
// (verdict.SpreadAtMost). Every server's pod is open at once and warmed
// up (WarmUpB); round k then measures pair k (ours and ab, in Order(k))
// on each server in turn, the first server moving by one each round. Run
// k of every cell is so taken within one round of run k of every other
// (about 15 s under the ci profile, 100 s under full).
//
// Why: measured one cell after another, each cell took 15 - 20 s, and a
// machine that is slower for a while (an Intel Xeon VM whose single runs
// spread 0.75 - 1.57x their cell's median) slowed whichever cells fell in
// that while, and only them: the article's four configurations came out
// 2.02x apart once, against 1.54 and 1.56 in the runs before and after.
//
// The cells' runs come back by cell id and generator, in round order. A
// group whose every cell is in the journal is taken from it; otherwise
// the whole group is measured again, since rounds only pair up within
// one measurement (a journal from before rounds is another
// JournalProtocol). The safety stop discards and repeats the whole group,
// which is 12 runs a round: a busy host costs more than it did cell by
// cell.
func (l *Lab) RoundsB(t stack.TB, servers []engine.ServerB, block int, prof engine.ProfileB) (map[string]map[string][]engine.RunB, error) {
	t.Helper()
	cells := make([]string, len(servers))
	for i, srv := range servers {
		cells[i] = verdict.Cell(srv.ID, block)
		l.Reports.Begin(cells[i])
	}
	if journalled := !slices.ContainsFunc(cells, func(c string) bool { return !l.Journal.Has(engine.UnitB(c)) }); journalled {
		out := map[string]map[string][]engine.RunB{}
		for _, c := range cells {
			var runs map[string][]engine.RunB
			ok, err := l.Journal.Load(engine.UnitB(c), &runs)
			if err != nil {
				return nil, err
			}
			if !ok {
				out = nil
				break
			}
			out[c] = runs
		}
		if out != nil {
			return out, nil
		}
	}
	var out map[string]map[string][]engine.RunB
	err := l.attempt(fmt.Sprintf("%d cells at %d ms blocking, in rounds", len(cells), block), cells, func(int) (_ *discard, err error) {
		out, err = l.measureRoundsB(t, servers, block, prof)
		return nil, err
	})
	if err != nil {
		return nil, err
	}
	for _, c := range cells {
		if err := l.Journal.Save(engine.UnitB(c), out[c]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// measureRoundsB is one attempt of RoundsB: open, warm, rounds, close.
// A pod that fails to close is left to its test's cleanup, as CellB does.
func (l *Lab) measureRoundsB(t stack.TB, servers []engine.ServerB, block int, prof engine.ProfileB) (map[string]map[string][]engine.RunB, error) {
	pods := make([]*stack.Pod, len(servers))
	for i, srv := range servers {
		pod, err := l.OpenB(t, srv, block)
		if err != nil {
			return nil, err
		}
		pods[i] = pod
		defer pod.Close()
	}
	for i, srv := range servers {
		if err := l.WarmUpB(pods[i], srv, block, prof); err != nil {
			return nil, fmt.Errorf("%s: %w", verdict.Cell(srv.ID, block), err)
		}
	}
	out := map[string]map[string][]engine.RunB{}
	for k := 1; k <= prof.Repeats[block]; k++ {
		for j := range servers {
			i := (j + k - 1) % len(servers)
			srv, cell := servers[i], verdict.Cell(servers[i].ID, block)
			if out[cell] == nil {
				out[cell] = map[string][]engine.RunB{}
			}
			for _, gen := range engine.Order(k) {
				r, err := l.MeasureB(pods[i], srv, block, gen, k, prof, 0)
				if err != nil {
					return nil, fmt.Errorf("%s round %d, %s: %w", cell, k, gen, err)
				}
				out[cell][gen] = append(out[cell][gen], r)
			}
		}
	}
	return out, nil
}
