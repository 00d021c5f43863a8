package engine

import (
	"fmt"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podspec"
)

// ArticleA is article A's matrix under stock TCP memory: three paths by 0,
// 1 and 2 slow downloads of 16 MiB at 2 MiB/s with two Gunicorn sync
// workers, gthread 1x4 direct with two downloads, and the article's pilot
// (Pilot) on the three paths.
var ArticleA = func() []Condition {
	var cs []Condition
	for _, p := range []Path{Direct, NginxOff, NginxOn} {
		for dl := range 3 {
			cs = append(cs, articleA(fmt.Sprintf("%s-%ddl", p.ID, dl), podspec.GunicornSync(2), p, dl))
		}
	}
	cs = append(cs, articleA("gthread-2dl", podspec.GunicornGthread(1, 4), Direct, 2))
	for _, p := range []Path{Direct, NginxOff, NginxOn} {
		cs = append(cs, Pilot(p))
	}
	return cs
}()

// The pilot's load: the article tried 8 MiB at 1 MiB/s with two downloads
// before its main series, and saw /fast p95 about 2 ms behind NGINX
// buffering off. Size and rate changed together between the two.
const (
	PilotBodyBytes = 8 << 20
	PilotReadRate  = 1 << 20
)

// Pilot is the article's pilot on path p: pilot-<path>.
func Pilot(p Path) Condition {
	c := articleA("pilot-"+p.ID, podspec.GunicornSync(2), p, 2)
	c.BodyBytes, c.ReadRate = PilotBodyBytes, PilotReadRate
	return c
}

func articleA(id string, s podspec.Server, p Path, downloads int) Condition {
	return Condition{ID: id, Ref: id, Server: s, Path: p, Downloads: downloads,
		BodyBytes: load.DefaultLargeSize, ReadRate: load.DefaultDownloadRate, TCP: Stock}
}

// Under is cs under TCP profile p: the same cells, each id suffixed with
// "@" and the profile's id (Stock keeps the ids as they are).
func Under(cs []Condition, p TCPProfile) []Condition {
	out := make([]Condition, 0, len(cs))
	for _, c := range cs {
		if p.ID != Stock.ID {
			c.ID += "@" + p.ID
		}
		c.TCP = p
		out = append(out, c)
	}
	return out
}

// Pick is the conditions of cs whose ids are in ids, in cs's order.
func Pick(cs []Condition, ids ...string) []Condition {
	var out []Condition
	for _, c := range cs {
		for _, id := range ids {
			if c.ID == id {
				out = append(out, c)
			}
		}
	}
	return out
}
